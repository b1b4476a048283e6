#!/usr/bin/env bash
# Install the Debian packages listed in scripts/apt-packages.txt that are not installed yet.
# Needs root (CI and the project's machines run as root); elsewhere it says what is missing.
set -euo pipefail
cd "$(dirname "$0")"
mapfile -t wanted < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' apt-packages.txt)
[ ${#wanted[@]} -gt 0 ] || exit 0
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ]; then
  echo "system-deps: please install (as root): apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
