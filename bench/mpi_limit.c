/* The limit of an MPI shared-file write and cold read: the MPI and I/O calls that
 * `mpirun -np N iolab run --layout shared --op write,read:cold` makes, with nothing else.
 *
 * Write phase: rank 0 creates the file empty (O_TRUNC) and writes back the file system
 * (syncfs), as iolab does before a write phase, untimed. Every rank opens the shared file
 * (O_WRONLY | O_CREAT); all meet at MPI_Barrier; each reads CLOCK_MONOTONIC, pwrites SIZE / BS
 * blocks of BS bytes of non-zero (pseudo-random) data at rank * SIZE + k * BS, fdatasyncs, reads the clock
 * again and closes. MPI_Gather brings the per-rank times to rank 0, which prints the bytes, the
 * slowest rank's time (min_SAR = bytes / slowest) and the sum of the ranks' rates (max_SAR), and
 * IOR's span: from the first rank's open to the last rank's close (CLOCK_MONOTONIC, which the
 * ranks of one host share), the figure IOR and iolab's agg divide all bytes by. As iolab does,
 * a rank's open is placed just before its start at the barrier (IOR opens after a barrier, so
 * no rank's wait for the others counts) and its close just after its end.
 * Read phase: rank 0 evicts the file from the page cache as iolab's read:cold does (fdatasync,
 * posix_fadvise DONTNEED, syncfs) and checks with mincore what is still resident, untimed;
 * then the same as the write with O_RDONLY and pread. No clock per op, no check of the data.
 *
 *   mpirun -np N mpi_limit FILE SIZE_PER_RANK BS
 *     prints (rank 0):  write BYTES SLOWEST_NS MAX_SAR_BYTES_PER_S SPAN_NS
 *                       resident FRACTION          (of the file, just before the read)
 *                       read BYTES SLOWEST_NS MAX_SAR_BYTES_PER_S SPAN_NS
 *   mpi_limit evict FILE     no MPI: fdatasync, fadvise DONTNEED, syncfs; prints the resident
 *                            fraction after (for IOR's file, between its write and its read)
 *   mpi_limit prime BYTES    no MPI: touch BYTES of fresh memory and free it (before a write:
 *                            the page cache then comes from memory in the same state for
 *                            every tool)
 *
 * Build: mpicc -O2 -Wall -o mpi_limit bench/mpi_limit.c   (bench/mpi.sh does)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int in_mpi = 0;

static void die(const char *what, const char *path) {
    fprintf(stderr, "mpi_limit: ");
    perror(path ? path : what);
    if (path) fprintf(stderr, "mpi_limit: (in %s)\n", what);
    if (in_mpi) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Fraction of FILE's pages in the page cache (mincore over a read-only mapping). */
static double resident(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) die("fstat", path);
    if (st.st_size == 0) {
        close(fd);
        return 0;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) die("mmap", path);
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page, in = 0;
    unsigned char *vec = malloc(pages);
    if (!vec || mincore(m, (size_t)st.st_size, vec) != 0) die("mincore", path);
    for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
    free(vec);
    munmap(m, (size_t)st.st_size);
    close(fd);
    return (double)in / (double)pages;
}

/* Commit, drop the file's clean pages, write back the file system; the fraction still cached. */
static double evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open", path);
    if (fdatasync(fd) != 0) die("fdatasync", path);
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc != 0) {
        fprintf(stderr, "mpi_limit: posix_fadvise %s: %s\n", path, strerror(rc));
        exit(1);
    }
    if (syncfs(fd) != 0) die("syncfs", path);
    close(fd);
    return resident(path);
}

/* Touches BYTES of fresh anonymous memory, page by page, and gives it back. */
static void prime(uint64_t bytes) {
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap", NULL);
    for (uint64_t i = 0; i < bytes; i += 4096) p[i] = 1;
    munmap(p, bytes);
}

/* One rank's phase: the time from the barrier to the end of its last op (and of its fdatasync
 * for a write), and its open and close placed around it: the clock at the barrier less the
 * open's time, and at the end plus the close's. */
struct timed {
    uint64_t ns, open_ns, close_ns;
};

static struct timed phase(const char *path, char *buf, uint64_t size, uint64_t bs, uint64_t base, int write) {
    struct timed r;
    uint64_t o = now_ns();
    int fd = write ? open(path, O_WRONLY | O_CREAT, 0644) : open(path, O_RDONLY);
    if (fd < 0) die("open", path);
    o = now_ns() - o;
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = now_ns();
    for (uint64_t off = 0; off < size; off += bs) {
        ssize_t n = write ? pwrite(fd, buf, bs, (off_t)(base + off)) : pread(fd, buf, bs, (off_t)(base + off));
        if (n != (ssize_t)bs) die(write ? "pwrite" : "pread", path);
    }
    if (write && fdatasync(fd) != 0) die("fdatasync", path);
    uint64_t t1 = now_ns();
    if (close(fd) != 0) die("close", path);
    r.ns = t1 - t0;
    r.open_ns = t0 - o;
    r.close_ns = t1 + (now_ns() - t1);
    return r;
}

/* Gathers the ranks' times at rank 0, which prints bytes, the slowest time, the sum of rates and
 * the span from the first open to the last close. */
static void report(const char *name, struct timed t, uint64_t size, int rank, int ranks) {
    uint64_t mine[3] = {t.ns, t.open_ns, t.close_ns};
    uint64_t *all = rank == 0 ? malloc(sizeof(uint64_t) * 3 * (size_t)ranks) : NULL;
    if (rank == 0 && !all) die("malloc", NULL);
    MPI_Gather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    uint64_t slowest = 0, first_open = UINT64_MAX, last_close = 0;
    double sum = 0;
    for (int r = 0; r < ranks; r++) {
        uint64_t ns = all[3 * r], o = all[3 * r + 1], c = all[3 * r + 2];
        if (ns > slowest) slowest = ns;
        if (o < first_open) first_open = o;
        if (c > last_close) last_close = c;
        sum += (double)size / ((double)ns / 1e9);
    }
    printf("%s %llu %llu %.0f %llu\n", name, (unsigned long long)(size * (uint64_t)ranks), (unsigned long long)slowest, sum,
           (unsigned long long)(last_close - first_open));
    fflush(stdout);
    free(all);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "evict") == 0) {
        printf("resident %.6f\n", evict(argv[2]));
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "prime") == 0) {
        prime(strtoull(argv[2], NULL, 10));
        return 0;
    }
    MPI_Init(&argc, &argv);
    in_mpi = 1;
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np N mpi_limit FILE SIZE_PER_RANK BS | mpi_limit evict FILE | mpi_limit prime BYTES\n");
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[1];
    uint64_t size = strtoull(argv[2], NULL, 10), bs = strtoull(argv[3], NULL, 10);
    if (bs == 0 || size == 0 || size % bs != 0) {
        if (rank == 0) fprintf(stderr, "mpi_limit: SIZE_PER_RANK must be a positive multiple of BS\n");
        MPI_Finalize();
        return 2;
    }
    char *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, bs) != 0) die("posix_memalign", NULL);
    /* Non-zero data (the virtual disk may treat zero blocks apart): pseudo-random bytes
     * (xorshift64), incompressible as iolab's are, different per rank, made before timing; the
     * same buffer is written at every offset (iolab also stamps each block, the limit does not). */
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1);
    for (uint64_t i = 0; i < bs; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (char)(x >> 24);
    }
    uint64_t base = (uint64_t)rank * size;

    if (rank == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) die("open", path);
        if (syncfs(fd) != 0) die("syncfs", path);
        close(fd);
    }
    report("write", phase(path, buf, size, bs, base, 1), size, rank, ranks);

    if (rank == 0) {
        printf("resident %.6f\n", evict(path));
        fflush(stdout);
    }
    report("read", phase(path, buf, size, bs, base, 0), size, rank, ranks);

    free(buf);
    MPI_Finalize();
    return 0;
}
