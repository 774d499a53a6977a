/* Three ways for rank 0 to gather one reply of BYTES bytes from every rank, timed against each
 * other on the same ranks: what iolab's rank 0 does at the end of every phase.
 *
 *   flat   rank 0 posts one MPI_Recv per rank, in rank order (how iolab gathers the replies of
 *          traced phases and of phases with I/O-server ranks);
 *   tree   a binomial tree of point-to-point messages: rank r receives the bundles of ranks
 *          r + 1, r + 2, r + 4, ... below its lowest set bit, appends them to its own reply and
 *          sends one bundle to r with that bit cleared (the shape of iolab's gather, which also
 *          merges the histograms on the way; here the bundles are only appended);
 *   gatherv MPI_Gather of the sizes, then MPI_Gatherv of the bytes into one buffer at rank 0.
 *
 * And, given BUCKETS and FILLED, two ways to sum the ranks' latency histograms at rank 0 (each
 * rank's histogram: BUCKETS counters of which FILLED are not zero):
 *
 *   merge  the binomial tree above, each bundle one sparse histogram (value, count pairs in
 *          value order) that a rank merges with its children's as they arrive, summing the
 *          counts of equal values (what iolab's tree does);
 *   reduce MPI_Reduce with MPI_SUM of every rank's whole array of BUCKETS counters (one
 *          layout on every rank, as a custom reduction of bucket counts would need).
 *
 * Each round: MPI_Barrier, then the methods in a rotating order, each timed at rank 0 from a
 * barrier to the moment it holds every byte (and checks them: each rank's reply is its rank
 * number repeated; the histograms' sum against the one rank 0 works out alone). Prints per
 * method min / median / max microseconds over ROUNDS.
 *
 *   mpirun -np N gather BYTES ROUNDS [BUCKETS FILLED]
 *
 * Build: mpicc -O2 -Wall -o gather bench/gather.c   (bench/gather.sh does)
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void fill(unsigned char *p, int rank, int bytes) { memset(p, rank & 0xff, bytes); }

/* Every byte of rank r's reply at r * bytes is r's. */
static void check(const unsigned char *all, int n, int bytes, const char *what) {
    for (int r = 0; r < n; r++)
        for (int i = 0; i < bytes; i++)
            if (all[(size_t)r * bytes + i] != (unsigned char)(r & 0xff)) {
                fprintf(stderr, "%s: rank %d's reply is wrong at byte %d\n", what, r, i);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
}

static void flat(int rank, int n, int bytes, unsigned char *all) {
    if (rank == 0) {
        fill(all, 0, bytes);
        for (int r = 1; r < n; r++)
            MPI_Recv(all + (size_t)r * bytes, bytes, MPI_BYTE, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        unsigned char *mine = malloc(bytes);
        fill(mine, rank, bytes);
        MPI_Send(mine, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        free(mine);
    }
}

/* Rank r's subtree is ranks r .. r + span - 1 (span: its lowest set bit, or the whole world at
 * rank 0); its bundle holds their replies in rank order. */
static void tree(int rank, int n, int bytes, unsigned char *all) {
    int span = rank == 0 ? n : (rank & -rank);
    if (rank + span > n) span = n - rank;
    unsigned char *bundle = rank == 0 ? all : malloc((size_t)span * bytes);
    fill(bundle, rank, bytes);
    for (int bit = 1; bit < (rank == 0 ? n : (rank & -rank)) && rank + bit < n; bit <<= 1) {
        int child = rank + bit, cspan = bit;
        if (child + cspan > n) cspan = n - child;
        MPI_Recv(bundle + (size_t)bit * bytes, cspan * bytes, MPI_BYTE, child, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    if (rank != 0) {
        MPI_Send(bundle, span * bytes, MPI_BYTE, rank & (rank - 1), 2, MPI_COMM_WORLD);
        free(bundle);
    }
}

static void gatherv(int rank, int n, int bytes, unsigned char *all) {
    unsigned char *mine = malloc(bytes);
    fill(mine, rank, bytes);
    int *sizes = rank == 0 ? malloc(sizeof(int) * n) : NULL, *at = NULL;
    MPI_Gather(&bytes, 1, MPI_INT, sizes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        at = malloc(sizeof(int) * n);
        for (int r = 0, sum = 0; r < n; r++) at[r] = sum, sum += sizes[r];
    }
    MPI_Gatherv(mine, bytes, MPI_BYTE, all, sizes, at, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(mine);
    free(sizes);
    free(at);
}

/* The histograms: rank r's non-zero counters are FILLED buckets from (r % 16) * 5, 3 apart
 * (modulo BUCKETS), each counting r % 5 + 1: ranks' buckets overlap, as workers' latencies
 * do. */
static int buckets, filled;

static int64_t bucket_of(int rank, int i) { return ((int64_t)(rank % 16) * 5 + (int64_t)i * 3) % buckets; }

typedef struct {
    uint64_t value, count;
} pair;

static int by_value(const void *a, const void *b) {
    uint64_t x = ((const pair *)a)->value, y = ((const pair *)b)->value;
    return (x > y) - (x < y);
}

/* Rank r's histogram as sparse pairs in value order; returns how many. */
static int sparse(int rank, pair *out) {
    for (int i = 0; i < filled; i++) out[i] = (pair){(uint64_t)bucket_of(rank, i), (uint64_t)(rank % 5 + 1)};
    qsort(out, filled, sizeof(pair), by_value);
    int k = 0; /* equal values (FILLED > BUCKETS / 3 wraps) summed */
    for (int i = 0; i < filled; i++)
        if (k > 0 && out[k - 1].value == out[i].value) out[k - 1].count += out[i].count;
        else out[k++] = out[i];
    return k;
}

/* a (na pairs) and b (nb) merged into out, counts of equal values summed; returns how many. */
static int merge_pairs(const pair *a, int na, const pair *b, int nb, pair *out) {
    int i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        if (j >= nb || (i < na && a[i].value < b[j].value)) out[k++] = a[i++];
        else if (i >= na || b[j].value < a[i].value) out[k++] = b[j++];
        else out[k++] = (pair){a[i].value, a[i].count + b[j].count}, i++, j++;
    }
    return k;
}

/* Rank 0's sum of every rank's histogram, dense, worked out alone: what both must give. */
static void expected(int n, uint64_t *sum) {
    memset(sum, 0, sizeof(uint64_t) * buckets);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < filled; i++) sum[bucket_of(r, i)] += r % 5 + 1;
}

static uint64_t *want, *got; /* rank 0's: the expected sum, and what a method gave */

static void check_sum(const char *what) {
    if (memcmp(want, got, sizeof(uint64_t) * buckets) != 0) {
        fprintf(stderr, "%s: the histograms' sum is wrong\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void merge(int rank, int n, int bytes, unsigned char *all) {
    (void)bytes, (void)all;
    /* A subtree's merged histogram has at most every bucket, a rank's own FILLED pairs. */
    int cap = buckets < filled * n ? buckets : filled * n;
    if (cap < filled) cap = filled;
    pair *mine = malloc(sizeof(pair) * cap), *child = malloc(sizeof(pair) * cap),
         *next = malloc(sizeof(pair) * cap);
    int len = sparse(rank, mine);
    for (int bit = 1; bit < (rank == 0 ? n : (rank & -rank)) && rank + bit < n; bit <<= 1) {
        MPI_Status st;
        MPI_Recv(child, cap * (int)sizeof(pair), MPI_BYTE, rank + bit, 3, MPI_COMM_WORLD, &st);
        int got_bytes;
        MPI_Get_count(&st, MPI_BYTE, &got_bytes);
        len = merge_pairs(mine, len, child, got_bytes / (int)sizeof(pair), next);
        pair *t = mine;
        mine = next, next = t;
    }
    if (rank != 0) {
        MPI_Send(mine, len * (int)sizeof(pair), MPI_BYTE, rank & (rank - 1), 3, MPI_COMM_WORLD);
    } else {
        memset(got, 0, sizeof(uint64_t) * buckets);
        for (int i = 0; i < len; i++) got[mine[i].value] = mine[i].count;
    }
    free(mine), free(child), free(next);
}

static void reduce(int rank, int n, int bytes, unsigned char *all) {
    (void)n, (void)bytes, (void)all;
    uint64_t *mine = calloc(buckets, sizeof(uint64_t));
    for (int i = 0; i < filled; i++) mine[bucket_of(rank, i)] += rank % 5 + 1;
    MPI_Reduce(mine, got, buckets, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    free(mine);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 3 && argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np N gather BYTES ROUNDS [BUCKETS FILLED]\n");
        MPI_Finalize();
        return 2;
    }
    int bytes = atoi(argv[1]), rounds = atoi(argv[2]);
    int methods = argc == 5 ? 5 : 3;
    if (methods == 5) {
        buckets = atoi(argv[3]), filled = atoi(argv[4]);
        if (buckets < 1 || filled < 1) {
            if (rank == 0) fprintf(stderr, "BUCKETS and FILLED must be 1 or more\n");
            MPI_Finalize();
            return 2;
        }
        if (rank == 0) {
            want = malloc(sizeof(uint64_t) * buckets), got = malloc(sizeof(uint64_t) * buckets);
            expected(n, want);
        }
    }
    void (*how[5])(int, int, int, unsigned char *) = {flat, tree, gatherv, merge, reduce};
    const char *name[5] = {"flat", "tree", "gatherv", "merge", "reduce"};
    unsigned char *all = rank == 0 ? malloc((size_t)n * bytes) : NULL;
    double *us = malloc(sizeof(double) * methods * rounds);
    for (int k = -1; k < rounds; k++) { /* round -1: a warm-up, not counted */
        for (int j = 0; j < methods; j++) {
            int m = (j + (k < 0 ? 0 : k)) % methods;
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) memset(all, 0xee, (size_t)n * bytes);
            if (rank == 0 && m >= 3) memset(got, 0xee, sizeof(uint64_t) * buckets);
            double t = now_us();
            how[m](rank, n, bytes, all);
            t = now_us() - t;
            if (rank == 0) {
                if (m < 3) check(all, n, bytes, name[m]);
                else check_sum(name[m]);
                if (k >= 0) us[m * rounds + k] = t;
            }
        }
    }
    if (rank == 0) {
        printf("%-8s %5s %7s %10s %10s %10s\n", "method", "ranks", "bytes", "min us", "median us", "max us");
        for (int m = 0; m < methods; m++) {
            double *v = us + m * rounds;
            qsort(v, rounds, sizeof(double), cmp);
            /* The histograms' methods: the bytes of one rank's whole array. */
            int b = m < 3 ? bytes : buckets * (int)sizeof(uint64_t);
            printf("%-8s %5d %7d %10.1f %10.1f %10.1f\n", name[m], n, b, v[0], v[rounds / 2], v[rounds - 1]);
        }
    }
    free(us);
    free(all);
    free(want);
    free(got);
    MPI_Finalize();
    return 0;
}
