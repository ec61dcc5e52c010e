#!/usr/bin/env bash
# The docker daemon and the image the image-mode tests use (docs/development.md, "Image mode").
#
#   daemon.sh install   Debian's docker.io, only when there is no dockerd
#   daemon.sh start     a daemon in the background unless one answers, then the test image unless present
#   daemon.sh stop      the daemon `start` started, by the PID in its pid file (one it did not start is left)
#
# The daemon has no bridge network (`--bridge=none --iptables=false`): containers run with
# `--network host` or `--network none`, and nothing they do leaves the loopback range. No image
# registry is used: the test image is a root filesystem made of Debian packages (`dpkg -x`), given
# to `docker import` under a pinned tag, and reused while it is there.
set -euo pipefail

STATE_DIR=${AGENTENV_DOCKER_DIR:-.agentenv/docker}
IMAGE=${AGENTENV_TEST_IMAGE:-agentenv-test/python:bookworm-1}
PID_FILE=$STATE_DIR/dockerd.pid
LOG_FILE=$STATE_DIR/dockerd.log
# Python 3.11 with its standard library, bash, coreutils and grep: enough for `python -c` and test scripts.
PACKAGES="base-files bash coreutils gcc-12-base grep libacl1 libattr1 libbz2-1.0 libc6 libcom-err2 libcrypt1 libdb5.3
  libexpat1 libffi8 libgcc-s1 libgdbm-compat4 libgdbm6 libgmp10 libgssapi-krb5-2 libk5crypto3 libkeyutils1
  libkrb5-3 libkrb5support0 liblzma5 libncursesw6 libnsl2 libpcre2-8-0 libpython3.11-minimal
  libpython3.11-stdlib libreadline8 libselinux1 libsqlite3-0 libssl3 libtinfo6 libtirpc-common libtirpc3
  libuuid1 media-types python3.11-minimal readline-common zlib1g"

answers() { docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; }

install() {
  command -v dockerd >/dev/null && return
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
}

start_daemon() {
  if answers; then
    echo "a docker daemon answers already: $(docker info --format '{{.ServerVersion}}')"
    return
  fi
  command -v dockerd >/dev/null || { echo "no dockerd: run make docker-install" >&2; exit 1; }
  mkdir -p "$STATE_DIR"
  # A session of its own, so it outlives this shell; dockerd writes its PID to the pid file itself.
  setsid dockerd --bridge=none --iptables=false --pidfile "$(cd "$STATE_DIR" && pwd)/dockerd.pid" \
    >"$LOG_FILE" 2>&1 </dev/null &
  local started=$SECONDS
  until answers; do
    if ! kill -0 $! 2>/dev/null || (( SECONDS - started > 30 )); then
      echo "dockerd did not come up; the end of $LOG_FILE:" >&2
      tail -n 20 "$LOG_FILE" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "started dockerd $(docker info --format '{{.ServerVersion}}') (pid $(cat "$PID_FILE"), log $LOG_FILE)"
}

build_image() {
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    return
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/debs" "$work/root"
  # shellcheck disable=SC2086
  (cd "$work/debs" && apt-get download -qq $PACKAGES 2>/dev/null)
  for deb in "$work"/debs/*.deb; do dpkg -x "$deb" "$work/root"; done
  (cd "$work/root" && rm -rf usr/share/doc usr/share/man usr/share/info usr/share/locale \
    && ln -sf python3.11 usr/bin/python3 && ln -sf python3.11 usr/bin/python \
    && printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >etc/passwd \
    && printf 'root:x:0:\nnogroup:x:65534:\n' >etc/group)
  tar -C "$work/root" -c . | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --message "agentenv test image: Debian's Python 3.11, bash, coreutils, grep" - "$IMAGE" >/dev/null
  echo "built $IMAGE"
}

stop_daemon() {
  if [ ! -f "$PID_FILE" ]; then
    echo "no dockerd started here ($PID_FILE is absent)"
    return
  fi
  local pid
  pid=$(cat "$PID_FILE")
  # Only the dockerd that wrote the file: a stale file's PID may have gone to another process since.
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
    kill -TERM "$pid"
    local waited=0
    while kill -0 "$pid" 2>/dev/null && (( waited < 300 )); do sleep 0.1; waited=$((waited + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
      echo "dockerd $pid did not stop in 30 s; killing it" >&2
      kill -KILL "$pid"
    fi
    echo "stopped dockerd (pid $pid)"
  else
    echo "dockerd $pid is gone; removing its pid file"
  fi
  rm -f "$PID_FILE"
}

case "${1:-}" in
  install) install ;;
  start) start_daemon; build_image ;;
  stop) stop_daemon ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
