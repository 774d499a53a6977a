# Pieces the benchmark scripts share; sourced (`. bench/lib.sh`) from the repository's root.

# need_pkg COMMAND PACKAGE: installs Debian's PACKAGE (saying so) when COMMAND is missing, or
# stops the script naming what to install.
need_pkg() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "installing $2 (Debian package)" >&2
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" ||
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2"; }; } >/dev/null 2>&1 ||
        { echo "$2 is needed: apt-get install $2" >&2; exit 1; }
}

# need_open_mpi: stops unless Open MPI's mpicc and mpirun are here (the scripts pass Open MPI's
# options); sets mpi_version to mpirun's first line.
need_open_mpi() {
    command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
        { echo "needs Open MPI: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 1; }
    mpi_version=$(mpirun --version 2>/dev/null | head -1)
    [[ $mpi_version == *"Open MPI"* ]] ||
        { echo "mpirun is not Open MPI's ($mpi_version): this script passes Open MPI's options" >&2; exit 1; }
}

# build_ior SRC TMP: builds IOR's public source SRC (github.com/hpc/ior) in TMP/ior against the
# same MPI (./bootstrap; ./configure CC=mpicc; make); sets ior (the binary) and ior_version.
build_ior() {
    local src=$1 tmp=$2 t
    [ -x "$src/bootstrap" ] || { echo "$src has no bootstrap: not IOR's source" >&2; exit 1; }
    for t in autoreconf make; do
        command -v $t >/dev/null || { echo "building IOR needs $t: apt-get install autoconf automake make" >&2; exit 1; }
    done
    ior_version=$(git -C "$src" describe --tags --always 2>/dev/null ||
        sed -n 's/^Version: *//p' "$src/META" 2>/dev/null || echo "?")
    echo "building IOR ($ior_version) from $src in $tmp/ior against $mpi_version (CC=mpicc)" >&2
    cp -a "$src/." "$tmp/ior"
    (cd "$tmp/ior" && ./bootstrap && ./configure CC=mpicc && make -j"$(nproc)") >"$tmp/ior-build.log" 2>&1 ||
        { tail -20 "$tmp/ior-build.log" >&2; echo "IOR did not build (log above)" >&2; exit 1; }
    ior=$tmp/ior/src/ior
    [ -x "$ior" ] || { echo "IOR built, but there is no $ior" >&2; exit 1; }
}

# need_iolab_mpi PATH: stops unless PATH is an iolab built with the mpi feature (naming how to
# build one), and warns when the sources are newer than it. Run from the repository's root.
need_iolab_mpi() {
    local hint="build it with: cargo build --release --features mpi (needs libopenmpi-dev libclang-dev), then give
its path with --iolab PATH, IOLAB=PATH or CARGO_TARGET_DIR=DIR" newer
    [ -x "$1" ] || { printf 'no iolab binary at %s: %s\n' "$1" "$hint" >&2; exit 1; }
    "$1" engines 2>/dev/null | grep -w mpiio >/dev/null ||
        { printf '%s is not built with the mpi feature (no mpiio engine): %s\n' "$1" "$hint" >&2; exit 1; }
    newer=$(find src Cargo.toml Cargo.lock -newer "$1" -print -quit 2>/dev/null || true)
    [ -z "$newer" ] || echo "warning: $newer is newer than $1: the binary may be stale" >&2
}
