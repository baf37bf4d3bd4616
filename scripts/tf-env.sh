# Sourced by build.sh and the test suite: point Terraform at the offline provider mirror when this
# machine has one, otherwise leave the user's own CLI configuration (and the public registry) alone.
_sr_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_sr_mirror="${SERVERLESS_RETRY_TF_MIRROR:-/opt/tf-plugins}"
mkdir -p "$_sr_root/build/terraform"
export TF_PLUGIN_CACHE_DIR="${TF_PLUGIN_CACHE_DIR:-$_sr_root/build/terraform/plugin-cache}"
mkdir -p "$TF_PLUGIN_CACHE_DIR"
# The test workspaces and stacks carry no lock file, and without one every init installs the provider
# into the cache again (its entry is removed and re-linked), so a plan reading it from another process
# can find it missing ("could not read package directory"). With this, an init links what the cache
# holds and leaves it alone. Only for our own runs: a lock file made this way has this platform's hash
# only, which a user's own root should not get.
export TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE="${TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE:-true}"
# Terraform and the AWS provider are Go programs, and Go collects garbage each time the heap doubles:
# with the provider's schema in memory that was a quarter to a third of their CPU in our plans and
# tests. Collect at 5x growth, with a soft cap of 1 GiB a process past which Go collects sooner
# (the least-privilege plan: 44 -> 31 CPU seconds, peak 380 -> 790 MB). A caller's values win.
export GOGC="${GOGC:-400}"
export GOMEMLIMIT="${GOMEMLIMIT:-1GiB}"
export TF_IN_AUTOMATION=1
export CHECKPOINT_DISABLE=1
if [ -d "$_sr_mirror" ]; then
  _sr_rc="$_sr_root/build/terraform/terraformrc"
  _sr_want="provider_installation {
  filesystem_mirror {
    path    = \"$_sr_mirror\"
    include = [\"registry.terraform.io/hashicorp/*\"]
  }
  direct {
    exclude = [\"registry.terraform.io/hashicorp/*\"]
  }
}"
  # Written only when it changes, and then whole under another name and renamed: the test processes
  # source this at the same time as others' Terraform reads the file, and one read it truncated in
  # place, empty (no mirror: its init asked the public registry, offline, and failed).
  if [ ! -f "$_sr_rc" ] || [ "$(cat "$_sr_rc")" != "$_sr_want" ]; then
    printf '%s\n' "$_sr_want" > "$_sr_rc.$$" && mv -f "$_sr_rc.$$" "$_sr_rc"
  fi
  export TF_CLI_CONFIG_FILE="$_sr_rc"
elif [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then
  # A CLI config variable naming a missing file only produces warnings: drop it.
  unset TF_CLI_CONFIG_FILE
fi
unset _sr_root _sr_mirror _sr_rc _sr_want
