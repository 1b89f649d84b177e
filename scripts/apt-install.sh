# Installs Debian packages for the test scripts: `source scripts/apt-install.sh`, then
# `apt_install pkg…`. One place for what every install needs on a shared or reused machine:
# - sudo only when not root;
# - a dpkg run that was interrupted earlier (a killed CI run, a session that ended mid-install)
#   is finished first: otherwise apt-get refuses with "dpkg was interrupted" and the whole gate
#   fails on a machine problem;
# - another apt/dpkg holding the lock is waited for, not failed on.
apt_install() {
  local sudo_=""
  [ "$(id -u)" -ne 0 ] && sudo_="sudo"
  if [ -n "$(dpkg --audit 2>/dev/null)" ]; then
    echo "apt_install: finishing an interrupted dpkg run first (dpkg --configure -a)" >&2
    DEBIAN_FRONTEND=noninteractive $sudo_ dpkg --configure -a >&2
  fi
  $sudo_ apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >&2
}
