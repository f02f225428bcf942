# Sourced by the scripts here: `need COMMAND PACKAGE` installs the Debian PACKAGE with apt-get
# when COMMAND is missing (with sudo unless root), or stops with a message where there is no
# apt-get.
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
