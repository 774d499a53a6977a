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
