# Sourced by build.sh: where our own runs keep Python bytecode.
# .venv is installed without bytecode (--no-compile: most of it is never imported), so Python
# compiles a module on its first import and caches it. Where PYTHONDONTWRITEBYTECODE is set (as in
# some CI images), nothing was cached: every process of a test run (the workers, emulators, CLI
# runs, checkov) compiled every module it imported from source, ~100 s of CPU on a fresh clone.
# The cache goes to build/pycache, never beside the sources, so a tree kept clean stays clean.
_sr_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$_sr_root/build/pycache}"
unset PYTHONDONTWRITEBYTECODE
unset _sr_root
