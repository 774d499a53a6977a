/* The physical limit of iolab's hot loop on this machine: the same system calls over the same
 * offsets in the same order, and nothing else (no clock per op, no histogram, no stamps, no
 * progress counter, no stop flag). bench/overhead.sh compiles it with gcc -O2 and compares
 * iolab with it.
 *
 *   limit MODE FILE BS TOTAL WORKERS ORDER [DEPTH] [SEED]
 *   limit md DIR ITEMS WORKERS unique|shared
 *   limit prime BYTES
 *
 *   MODE     pread | pwrite | uring | print   (pread and uring first read the file once,
 *            untimed, as iolab's read:warm does; print writes "worker op offset" lines and does
 *            no I/O, so a script can check the offsets against iolab's trace; pwrite truncates FILE first, untimed, and ends with one
 *            fdatasync, timed, as iolab's `sync = end`; uring reads with IORING_OP_READ_FIXED
 *            on a registered file and registered buffers, DEPTH in flight, submitting and
 *            waiting in one io_uring_enter as iolab's uring engine does)
 *   BS       bytes per op; TOTAL bytes of FILE the workers share
 *   WORKERS  threads; worker w owns blocks [B w / W, B (w + 1) / W) of the B = TOTAL / BS
 *            blocks (iolab's `layout = shared`)
 *   ORDER    seq | random (iolab's seeded permutation and per-worker seeds, so the offsets
 *            and their order are iolab's exactly; computed before timing starts)
 *
 * Prints one line: ops, bytes, the slowest worker's time, ops/s and bytes/s over that time
 * (iolab's min_SAR). The workers start together at a barrier; each worker's time runs from
 * the barrier to the end of its last op (and commit). One worker runs on the main thread.
 *
 * md: iolab's metadata phases create, stat, unlink of empty files (`--op create,stat,unlink
 * --sync none`): worker w's ITEMS files `f<w>.<k>` in DIR/md/w<w> (unique, one directory per
 * worker, as iolab's `md_dirs = unique` with depth 0) or all in DIR/md/shared (shared), each
 * directory made before and removed after, untimed. Each phase: the workers open their
 * directory, meet at a barrier, and make one call per item on its name relative to the
 * directory (openat O_CREAT|O_EXCL + close; fstatat; unlinkat), the name written with a bare
 * decimal conversion. Prints one line per phase: "md PHASE ops N time_ns T ops_per_s R"
 * (R = N / the slowest worker's time, iolab's min_SAR).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
    perror(what);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* iolab's src/plan/order.rs: SplitMix64, the per-worker seed, and the permutation. */
static uint64_t splitmix64(uint64_t *s) {
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t worker_seed(uint64_t seed, uint32_t w) {
    uint64_t s = seed ^ ((uint64_t)w * 0xA24BAED4963EE407ull);
    return splitmix64(&s);
}

struct perm {
    uint64_t n, mask, keys[3];
    unsigned shift;
};

static struct perm perm_new(uint64_t n, uint64_t seed) {
    struct perm p;
    unsigned bits = n <= 1 ? 1 : 64 - __builtin_clzll(n - 1);
    p.n = n;
    p.mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    p.shift = bits / 2 > 1 ? bits / 2 : 1;
    uint64_t s = seed;
    for (int i = 0; i < 3; i++) p.keys[i] = splitmix64(&s);
    return p;
}

static uint64_t perm_mix(const struct perm *p, uint64_t x) {
    static const uint64_t mult[3] = {0x9E3779B97F4A7C15ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull};
    for (int i = 0; i < 3; i++) {
        x = (x * mult[i] + p->keys[i]) & p->mask;
        x ^= x >> p->shift;
    }
    return x;
}

static uint64_t perm_apply(const struct perm *p, uint64_t k) {
    uint64_t x = perm_mix(p, k);
    while (x >= p->n) x = perm_mix(p, x);
    return x;
}

struct job {
    int mode; /* 0 pread, 1 pwrite, 2 uring */
    int fd;
    size_t bs;
    unsigned depth;
    uint64_t *offsets, n;
    pthread_barrier_t *barrier;
    uint64_t ns;
};

static void fill(char *buf, size_t len, uint64_t seed) {
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t v = splitmix64(&seed) | 1;
        memcpy(buf + i, &v, 8);
    }
}

static void run_sync(struct job *j, char *buf) {
    pthread_barrier_wait(j->barrier);
    uint64_t t0 = now_ns();
    for (uint64_t k = 0; k < j->n; k++) {
        ssize_t r = j->mode == 1 ? pwrite(j->fd, buf, j->bs, j->offsets[k]) : pread(j->fd, buf, j->bs, j->offsets[k]);
        if (r != (ssize_t)j->bs) die(j->mode == 1 ? "pwrite" : "pread");
    }
    if (j->mode == 1 && fdatasync(j->fd)) die("fdatasync");
    j->ns = now_ns() - t0;
}

/* A raw io_uring: the rings mapped as the kernel lays them out (IORING_FEAT_SINGLE_MMAP). */
struct ring {
    int fd;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static int ring_setup(struct ring *r, unsigned entries) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
              IORING_SETUP_DEFER_TASKRUN;
    p.cq_entries = entries;
    r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
    if (r->fd < 0 && errno == EINVAL) { /* older kernels: a plain ring, as iolab falls back to */
        memset(&p, 0, sizeof p);
        p.flags = IORING_SETUP_CQSIZE;
        p.cq_entries = entries;
        r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
    }
    if (r->fd < 0) return -1;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    size_t len = sq_len > cq_len ? sq_len : cq_len;
    char *sq = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
    if (sq == MAP_FAILED) return -1;
    r->sq_head = (unsigned *)(sq + p.sq_off.head);
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(sq + p.cq_off.head);
    r->cq_tail = (unsigned *)(sq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
    r->sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   r->fd, IORING_OFF_SQES);
    if (r->sqes == MAP_FAILED) return -1;
    for (unsigned i = 0; i < p.sq_entries; i++) r->sq_array[i] = i;
    return 0;
}

static void run_uring(struct job *j) {
    unsigned depth = j->depth;
    struct ring r;
    if (ring_setup(&r, depth)) die("io_uring_setup");
    if (syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_FILES, &j->fd, 1)) die("register files");
    size_t stride = (j->bs + 4095) & ~(size_t)4095;
    char *bufs = aligned_alloc(4096, stride * depth);
    if (!bufs) die("aligned_alloc");
    memset(bufs, 0, stride * depth);
    struct iovec *iov = calloc(depth, sizeof *iov);
    for (unsigned s = 0; s < depth; s++) iov[s] = (struct iovec){bufs + s * stride, j->bs};
    if (syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_BUFFERS, iov, depth)) die("register buffers");
    unsigned *free_slots = malloc(depth * sizeof *free_slots), nfree = depth;
    for (unsigned s = 0; s < depth; s++) free_slots[s] = depth - 1 - s;

    pthread_barrier_wait(j->barrier);
    uint64_t t0 = now_ns(), k = 0, inflight = 0;
    for (;;) {
        unsigned tail = *r.sq_tail, queued = 0;
        while (k < j->n && nfree) {
            unsigned slot = free_slots[--nfree];
            struct io_uring_sqe *e = &r.sqes[tail & *r.sq_mask];
            memset(e, 0, sizeof *e);
            e->opcode = IORING_OP_READ_FIXED;
            e->flags = IOSQE_FIXED_FILE;
            e->fd = 0;
            e->addr = (uint64_t)(uintptr_t)(bufs + (size_t)slot * stride);
            e->len = (unsigned)j->bs;
            e->off = j->offsets[k++];
            e->buf_index = (uint16_t)slot;
            e->user_data = slot;
            tail++;
            queued++;
        }
        __atomic_store_n(r.sq_tail, tail, __ATOMIC_RELEASE);
        inflight += queued;
        if (!inflight) break;
        int rc = (int)syscall(__NR_io_uring_enter, r.fd, queued, 1, IORING_ENTER_GETEVENTS, NULL, 0);
        if (rc < 0 && errno != EINTR && errno != EBUSY) die("io_uring_enter");
        unsigned head = *r.cq_head, ctail = __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE);
        for (; head != ctail; head++) {
            struct io_uring_cqe *c = &r.cqes[head & *r.cq_mask];
            if (c->res != (int)j->bs) {
                fprintf(stderr, "read_fixed: %d\n", c->res);
                exit(1);
            }
            free_slots[nfree++] = (unsigned)c->user_data;
            inflight--;
        }
        __atomic_store_n(r.cq_head, head, __ATOMIC_RELEASE);
    }
    j->ns = now_ns() - t0;
}

/* The metadata phases. */
struct mdjob {
    const char *dir;
    unsigned w;
    uint64_t items;
    int phase; /* 0 create, 1 stat, 2 unlink */
    pthread_barrier_t *barrier;
    uint64_t ns;
};

static size_t put_u64(char *p, uint64_t v) {
    char d[20];
    size_t n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) p[i] = d[n - 1 - i];
    return n;
}

static void *md_worker(void *arg) {
    struct mdjob *j = arg;
    int dfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) die(j->dir);
    char name[64];
    name[0] = 'f';
    size_t pre = 1 + put_u64(name + 1, j->w);
    name[pre++] = '.';
    struct stat st;
    pthread_barrier_wait(j->barrier);
    uint64_t t0 = now_ns();
    for (uint64_t k = 0; k < j->items; k++) {
        name[pre + put_u64(name + pre, k)] = 0;
        if (j->phase == 0) {
            int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0 || close(fd)) die("create");
        } else if (j->phase == 1) {
            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) die("fstatat");
        } else if (unlinkat(dfd, name, 0)) {
            die("unlinkat");
        }
    }
    j->ns = now_ns() - t0;
    close(dfd);
    return NULL;
}

static int md_main(const char *dir, uint64_t items, unsigned workers, int shared) {
    static const char *names[3] = {"create", "stat", "unlink"};
    char base[3900], path[4096];
    snprintf(base, sizeof base, "%s/md", dir);
    if (mkdir(base, 0755)) die(base);
    for (unsigned w = 0; w < (shared ? 1 : workers); w++) {
        if (shared) snprintf(path, sizeof path, "%s/shared", base);
        else snprintf(path, sizeof path, "%s/w%u", base, w);
        if (mkdir(path, 0755)) die(path);
    }
    struct mdjob *jobs = calloc(workers, sizeof *jobs);
    char (*dirs)[4096] = calloc(workers, 4096);
    pthread_t *tids = calloc(workers, sizeof *tids);
    for (int phase = 0; phase < 3; phase++) {
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, workers);
        for (unsigned w = 0; w < workers; w++) {
            if (shared) snprintf(dirs[w], 4096, "%s/shared", base);
            else snprintf(dirs[w], 4096, "%s/w%u", base, w);
            jobs[w] = (struct mdjob){dirs[w], w, items, phase, &barrier, 0};
            if (workers > 1 && pthread_create(&tids[w], NULL, md_worker, &jobs[w])) die("pthread_create");
        }
        if (workers == 1) md_worker(&jobs[0]);
        uint64_t slowest = 0;
        for (unsigned w = 0; w < workers; w++) {
            if (workers > 1) pthread_join(tids[w], NULL);
            if (jobs[w].ns > slowest) slowest = jobs[w].ns;
        }
        pthread_barrier_destroy(&barrier);
        uint64_t ops = items * workers;
        printf("md %s ops %llu time_ns %llu ops_per_s %.0f\n", names[phase], (unsigned long long)ops,
               (unsigned long long)slowest, ops / (slowest / 1e9));
        fflush(stdout);
    }
    for (unsigned w = 0; w < (shared ? 1 : workers); w++) {
        if (shared) snprintf(path, sizeof path, "%s/shared", base);
        else snprintf(path, sizeof path, "%s/w%u", base, w);
        if (rmdir(path)) die(path);
    }
    if (rmdir(base)) die(base);
    return 0;
}

static void *worker(void *arg) {
    struct job *j = arg;
    if (j->mode == 2) {
        run_uring(j);
        return NULL;
    }
    char *buf = aligned_alloc(4096, (j->bs + 4095) & ~(size_t)4095);
    if (!buf) die("aligned_alloc");
    fill(buf, j->bs, 1);
    run_sync(j, buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "prime")) {
        /* limit prime BYTES: touch BYTES of fresh memory (one write per page), then free it, so
         * that the next run finds the guest's free memory in the same state whichever tool
         * ran before (on a virtual machine, memory freed a while ago is slow to reuse). */
        size_t len = strtoull(argv[2], 0, 10);
        char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) die("mmap");
        for (size_t i = 0; i < len; i += 4096) p[i] = 1;
        munmap(p, len);
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "md")) {
        unsigned workers = (unsigned)strtoul(argv[4], 0, 10);
        uint64_t items = strtoull(argv[3], 0, 10);
        if (!workers || !items) {
            fprintf(stderr, "limit: bad arguments\n");
            return 2;
        }
        return md_main(argv[2], items, workers, !strcmp(argv[5], "shared"));
    }
    if (argc < 7) {
        fprintf(stderr, "usage: limit pread|pwrite|uring|print FILE BS TOTAL WORKERS seq|random [DEPTH] [SEED]\n");
        return 2;
    }
    int mode = !strcmp(argv[1], "pread")    ? 0
               : !strcmp(argv[1], "pwrite") ? 1
               : !strcmp(argv[1], "uring")  ? 2
               : !strcmp(argv[1], "print")  ? 3
                                            : -1;
    size_t bs = strtoull(argv[3], 0, 10);
    uint64_t total = strtoull(argv[4], 0, 10);
    unsigned workers = (unsigned)strtoul(argv[5], 0, 10);
    int random_order = !strcmp(argv[6], "random");
    unsigned depth = argc > 7 ? (unsigned)strtoul(argv[7], 0, 10) : 32;
    uint64_t seed = argc > 8 ? strtoull(argv[8], 0, 10) : 1;
    if (mode < 0 || !bs || !workers || !depth || total < bs * workers) {
        fprintf(stderr, "limit: bad arguments\n");
        return 2;
    }
    int fd = mode == 3 ? -1 : open(argv[2], mode == 1 ? O_RDWR | O_CREAT : O_RDONLY, 0644);
    if (fd < 0 && mode != 3) die(argv[2]);
    if (mode == 1 && ftruncate(fd, 0)) die("ftruncate");
    if (mode == 0 || mode == 2) {
        /* Read the whole file once, untimed, right before timing, as iolab's `read:warm` does
         * in its own process: a process that starts timing straight after a pause runs its
         * first tenths of a second slower on this machine. */
        size_t chunk = 1 << 20;
        char *warm = malloc(chunk);
        if (!warm) die("malloc");
        for (uint64_t off = 0; off < total;) {
            ssize_t r = pread(fd, warm, chunk, off);
            if (r <= 0) break;
            off += (uint64_t)r;
        }
        free(warm);
    }
    uint64_t blocks = total / bs;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, workers);
    struct job *jobs = calloc(workers, sizeof *jobs);
    pthread_t *tids = calloc(workers, sizeof *tids);
    for (unsigned w = 0; w < workers; w++) {
        uint64_t first = blocks * w / workers, end = blocks * (w + 1) / workers, n = end - first;
        struct job *j = &jobs[w];
        *j = (struct job){mode, fd, bs, depth, malloc(n * sizeof(uint64_t)), n, &barrier, 0};
        struct perm p = perm_new(n, worker_seed(seed, w));
        for (uint64_t k = 0; k < n; k++) j->offsets[k] = (first + (random_order ? perm_apply(&p, k) : k)) * bs;
        if (mode == 3) {
            for (uint64_t k = 0; k < n; k++) printf("%u %llu %llu\n", w, (unsigned long long)k, (unsigned long long)j->offsets[k]);
            continue;
        }
        /* One worker runs on the main thread, as iolab runs it: a process with one thread
         * makes cheaper system calls (no file reference count per call). */
        if (workers > 1 && pthread_create(&tids[w], NULL, worker, j)) die("pthread_create");
    }
    if (workers == 1 && mode != 3) worker(&jobs[0]);
    if (mode == 3) return 0;
    uint64_t slowest = 0, ops = 0;
    for (unsigned w = 0; w < workers; w++) {
        if (workers > 1) pthread_join(tids[w], NULL);
        if (jobs[w].ns > slowest) slowest = jobs[w].ns;
        ops += jobs[w].n;
    }
    double s = slowest / 1e9;
    printf("ops %llu bytes %llu time_ns %llu ops_per_s %.0f bytes_per_s %.0f\n", (unsigned long long)ops,
           (unsigned long long)(ops * bs), (unsigned long long)slowest, ops / s, ops * bs / s);
    return 0;
}
