# Shared by .ci/test and .ci/quickstart (sourced, not run).

# Installs the Debian packages given as arguments that are not installed yet.
# apt-get runs (after one update) only when something is missing.
ensure_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

# Configures build/ (Release) with the extra cmake arguments given.
configure() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
}

# Installs the PyPI packages given as arguments that are not importable yet.
ensure_python_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    python3 -c "import $pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing from PyPI: ${missing[*]}"
  # A Debian-managed interpreter refuses plain pip installs (PEP 668).
  python3 -m pip install --quiet "${missing[@]}" ||
    python3 -m pip install --quiet --break-system-packages "${missing[@]}"
}

# CI runs one test (or fuzzer) per core, and each test's OpenMP team has a
# thread per core: threads that spin while they wait for work (libgomp's
# default) take the cores from the other tests. Passive waiting changes no
# result and cut ctest's time by about a fifth on 2 cores.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
