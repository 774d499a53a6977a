/* The limit of an MPI shared-file write and read: the same MPI and I/O calls iolab makes for
 * `mpirun -np N iolab run --layout shared --op write,read:cold`, with nothing else. Each rank
 * opens the one shared file, all meet at a barrier, each times from there: pwrite of BS-byte
 * blocks of non-zero data at rank * SIZE + k * BS, then fdatasync; the times are gathered at
 * rank 0, which prints bytes, the slowest rank's time and the sum of the ranks' rates. Then the
 * same for a read, after rank 0 has evicted the file from the page cache (fdatasync and
 * posix_fadvise DONTNEED, as iolab's cold read does) and all ranks meet again.
 *
 *   mpirun -np N mpi_limit FILE SIZE_PER_RANK BS
 *   prints: write BYTES SLOWEST_NS SUM_OF_RATES_BYTES_PER_S
 *           read  BYTES SLOWEST_NS SUM_OF_RATES_BYTES_PER_S
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One phase on this rank: the time from the barrier to the end of its last op (and its commit
 * for writes). */
static uint64_t phase(int fd, char *buf, uint64_t size, uint64_t bs, uint64_t base, int write) {
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = now_ns();
    for (uint64_t off = 0; off < size; off += bs) {
        ssize_t n = write ? pwrite(fd, buf, bs, (off_t)(base + off)) : pread(fd, buf, bs, (off_t)(base + off));
        if (n != (ssize_t)bs) die(write ? "pwrite" : "pread");
    }
    if (write && fdatasync(fd) != 0) die("fdatasync");
    return now_ns() - t0;
}

static void report(const char *name, uint64_t ns, uint64_t size, int rank, int ranks) {
    uint64_t *all = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)ranks) : NULL;
    MPI_Gather(&ns, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    uint64_t slowest = 0;
    double sum = 0;
    for (int r = 0; r < ranks; r++) {
        if (all[r] > slowest) slowest = all[r];
        sum += (double)size / ((double)all[r] / 1e9);
    }
    printf("%s %llu %llu %.0f\n", name, (unsigned long long)(size * (uint64_t)ranks), (unsigned long long)slowest, sum);
    free(all);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: mpi_limit FILE SIZE_PER_RANK BS\n");
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[1];
    uint64_t size = strtoull(argv[2], NULL, 10), bs = strtoull(argv[3], NULL, 10);
    char *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, bs) != 0) die("posix_memalign");
    for (uint64_t i = 0; i < bs; i++) buf[i] = (char)(i * 131 + 7 + rank); /* non-zero data */
    if (rank == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) die("open");
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = open(path, O_RDWR);
    if (fd < 0) die("open");
    uint64_t base = (uint64_t)rank * size;
    report("write", phase(fd, buf, size, bs, base, 1), size, rank, ranks);
    if (rank == 0) {
        if (fdatasync(fd) != 0) die("fdatasync");
        if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) die("posix_fadvise");
    }
    report("read", phase(fd, buf, size, bs, base, 0), size, rank, ranks);
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) unlink(path);
    MPI_Finalize();
    return 0;
}
