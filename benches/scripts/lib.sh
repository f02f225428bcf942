# Sourced by the scripts here (from the repository's root).

# `need COMMAND PACKAGE`: installs the Debian PACKAGE with apt-get when COMMAND is missing (with
# sudo unless root), or stops with a message where there is no apt-get.
need() {
  command -v "$1" >/dev/null 2>&1 && return
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "${0##*/}: $1 is missing; install it (Debian: $2)" >&2
    exit 1
  fi
  local sudo
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get install -y "$2"
}

# `listening LOG PID`: waits for `frpc-bench serve` (process PID, writing to LOG) to print
# `LISTENING <addr>`, then prints the address; stops with its log if it exits first.
listening() {
  until grep -q LISTENING "$1"; do
    if ! kill -0 "$2" 2>/dev/null; then
      cat "$1" >&2
      exit 1
    fi
    sleep 0.05
  done
  awk '/LISTENING/ {print $2}' "$1"
}
