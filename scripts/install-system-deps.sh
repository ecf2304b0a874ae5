#!/usr/bin/env bash
# Install the system tools the scorer and the report tests need, if missing:
#   Perl XML::Parser + XML::DOM (ROUGE-1.5.5), Java (METEOR 1.5), Chromium (HTML leaderboard test).
# Runs apt-get when we are root (or have passwordless sudo); otherwise prints the command to run.
set -euo pipefail

need=()
perl -MXML::Parser -e1 2>/dev/null || need+=(libxml-parser-perl)
perl -MXML::DOM -e1 2>/dev/null || need+=(libxml-dom-perl)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "warning: missing system packages (${need[*]}) and no apt-get; install their equivalents by hand." >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "warning: missing system packages; run: sudo apt-get install -y ${need[*]}" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
