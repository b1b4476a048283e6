#!/usr/bin/env bash
# Install the missing Debian packages of the lists given (default: apt-packages.txt, what running
# needs). Never fails the build over them: without root, or off Debian, it says what is missing,
# the command that installs it, and what works meanwhile. When another process holds the apt
# lock (an unattended upgrade, say), it names that process and waits for it (up to 10 minutes).
set -euo pipefail
cd "$(dirname "$0")"
lists=("${@:-apt-packages.txt}")
wanted=()
for list in "${lists[@]}"; do
  mapfile -t -O "${#wanted[@]}" wanted < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
done
[ ${#wanted[@]} -gt 0 ] || exit 0

explain() {
  echo "system-deps: missing Debian packages: $*" >&2
  case " $* " in
    *" espeak-ng "*)
      echo "system-deps: without espeak-ng callplane runs, but the agent has no voice: calls are" \
           "text only (simulated calls work; audio calls are silent). \`callplane doctor\`" \
           "lists what is missing." >&2 ;;
  esac
}

if ! command -v dpkg-query >/dev/null; then
  echo "system-deps: not a Debian system; install with your package manager: ${wanted[*]}" >&2
  explain "${wanted[@]}"
  exit 0
fi
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ]; then
  explain "${missing[@]}"
  echo "system-deps: installing system packages needs root: sudo apt-get install ${missing[*]}" >&2
  exit 0
fi

holders() { pgrep -a -f '(^|/)(apt|apt-get|dpkg|unattended-upgr)' 2>/dev/null | grep -v "$$" || true; }
held=$(holders)
if [ -n "$held" ]; then
  echo "system-deps: the apt lock is held by:" >&2
  echo "$held" | sed 's/^/  /' >&2
  echo "system-deps: waiting for it (up to 10 minutes)..." >&2
fi
echo "system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
wait_lock=(-o DPkg::Lock::Timeout=600)
apt-get "${wait_lock[@]}" update -qq || echo "system-deps: apt-get update failed; trying the install anyway" >&2
if ! apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  explain "${missing[@]}"
  echo "system-deps: apt-get install failed (see above); run it again: apt-get install ${missing[*]}" >&2
fi
