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
 * Each round: MPI_Barrier, then the three methods in a rotating order, each timed at rank 0
 * from a barrier to the moment it holds every byte (and checks them: each rank's reply is its
 * rank number repeated). Prints per method min / median / max microseconds over ROUNDS.
 *
 *   mpirun -np N gather BYTES ROUNDS
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

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np N gather BYTES ROUNDS\n");
        MPI_Finalize();
        return 2;
    }
    int bytes = atoi(argv[1]), rounds = atoi(argv[2]);
    void (*how[3])(int, int, int, unsigned char *) = {flat, tree, gatherv};
    const char *name[3] = {"flat", "tree", "gatherv"};
    unsigned char *all = rank == 0 ? malloc((size_t)n * bytes) : NULL;
    double *us = malloc(sizeof(double) * 3 * rounds);
    for (int k = -1; k < rounds; k++) { /* round -1: a warm-up, not counted */
        for (int j = 0; j < 3; j++) {
            int m = (j + (k < 0 ? 0 : k)) % 3;
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) memset(all, 0xee, (size_t)n * bytes);
            double t = now_us();
            how[m](rank, n, bytes, all);
            t = now_us() - t;
            if (rank == 0) {
                check(all, n, bytes, name[m]);
                if (k >= 0) us[m * rounds + k] = t;
            }
        }
    }
    if (rank == 0) {
        printf("%-8s %5s %7s %10s %10s %10s\n", "method", "ranks", "bytes", "min us", "median us", "max us");
        for (int m = 0; m < 3; m++) {
            double *v = us + m * rounds;
            qsort(v, rounds, sizeof(double), cmp);
            printf("%-8s %5d %7d %10.1f %10.1f %10.1f\n", name[m], n, bytes, v[0], v[rounds / 2], v[rounds - 1]);
        }
    }
    free(us);
    free(all);
    MPI_Finalize();
    return 0;
}
