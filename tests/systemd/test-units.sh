#!/usr/bin/env bash
# test-units -- the systemd units of tools/systemd, rendered as meson installs them but
# pointing at this build's daemons, pass `systemd-analyze verify` with no complaint about
# them; the shipped coord.conf is accepted by each daemon; a unit with an unknown key
# is caught (so the check can fail).  Exit 77 when systemd-analyze is missing or
# cannot run here.
#
#   test-units.sh SOURCE_DIR BUILD_DIR
set -uo pipefail

src=${1:?source dir}
build=${2:?build dir}
analyze=$(command -v systemd-analyze) || { echo "SKIP: no systemd-analyze"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/etc/coord" "$tmp/units"
for role in adapter lifecycle controller; do
  ln -s "$build/$role/coord-$role" "$tmp/bin/coord-$role"
done
cp "$src/tools/systemd/coord.conf" "$tmp/etc/coord/coord.conf"

render() {
  sed -e "s|@BINDIR@|$tmp/bin|g" -e "s|@SYSCONFDIR@|$tmp/etc|g" -e "s|@INSTANCE_UNIT@||g" \
      -e "s|@INSTANCE_DESC@|${3:-}|g" -e "s|@INSTANCE_ARGS@|${4:-}|g" "$1" > "$2"
}
for role in adapter lifecycle controller; do
  render "$src/tools/systemd/coord-$role.service.in" "$tmp/units/coord-$role.service"
done
# The template of the fleet's followers (tools/systemd/meson.build).
render "$src/tools/systemd/coord-lifecycle.service.in" "$tmp/units/coord-lifecycle@.service" \
  ", fleet follower %i" " --instance-id %i"
# The standby adapter's template.
render "$src/tools/systemd/coord-adapter.service.in" "$tmp/units/coord-adapter@.service" ", %i"
cp "$src/tools/systemd/coord.target" "$tmp/units/coord.target"
if grep -n '@[A-Z]*@' "$tmp"/units/*; then
  echo "FAIL: a placeholder was left in a rendered unit"; exit 1
fi

# Any line naming one of our files is a complaint (an unknown key, a bad value, a
# missing executable).  Lines about other units (the host's own) are not ours.
verify() {
  local out rc
  out=$(cd "$tmp/units" && SYSTEMD_LOG_LEVEL=notice "$analyze" verify --man=no "$@" 2>&1); rc=$?
  printf '%s\n' "$out" | grep -E "$tmp|coord[-.]" | grep -v '^$' || true
  return $rc
}

# Can it run here at all?  A unit with nothing wrong must pass.
printf '[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n' > "$tmp/units/probe.service"
if ! (cd "$tmp/units" && "$analyze" verify --man=no probe.service >/dev/null 2>&1); then
  echo "SKIP: systemd-analyze verify does not work in this environment"; exit 77
fi
rm -f "$tmp/units/probe.service"

complaints=$(verify coord-adapter.service coord-adapter@standby.service coord-lifecycle.service coord-lifecycle@1.service coord-controller.service coord.target)
rc=$?
if [ $rc -ne 0 ] || [ -n "$complaints" ]; then
  echo "FAIL: systemd-analyze verify (exit $rc):"; printf '%s\n' "$complaints"; exit 1
fi
echo "ok: systemd-analyze verify: 3 services, a standby adapter (coord-adapter@standby), a fleet follower (coord-lifecycle@1) and coord.target, no complaint"

# Each daemon accepts the shipped configuration file (its [coord] and own section):
# --help returns only after the file was read, exit 64 on a bad key or value.
for role in adapter lifecycle controller; do
  if ! "$tmp/bin/coord-$role" --config "$tmp/etc/coord/coord.conf" --help >/dev/null 2>"$tmp/err"; then
    echo "FAIL: coord-$role refuses the shipped coord.conf: $(cat "$tmp/err")"; exit 1
  fi
done
echo "ok: coord.conf accepted by the three daemons"

# Every ExecStart names a daemon of this build and reads the one config file.
for role in adapter lifecycle controller; do
  extra=; [ $role = adapter ] && extra=" --standby"       # node-standby.c note 4
  grep -qx "ExecStart=$tmp/bin/coord-$role --config $tmp/etc/coord/coord.conf$extra" "$tmp/units/coord-$role.service" \
    || { echo "FAIL: coord-$role.service: unexpected ExecStart"; exit 1; }
  grep -qx 'Type=notify' "$tmp/units/coord-$role.service" || { echo "FAIL: coord-$role.service is not Type=notify"; exit 1; }
done

# The standby's unit runs the same daemon with the same flags: either may be primary.
grep -qx "ExecStart=$tmp/bin/coord-adapter --config $tmp/etc/coord/coord.conf --standby" "$tmp/units/coord-adapter@.service" \
  || { echo "FAIL: coord-adapter@.service: unexpected ExecStart"; exit 1; }

# The check can fail: a unit with a misspelt key is reported.
sed 's/^Restart=on-failure/Restrat=on-failure/' "$tmp/units/coord-adapter.service" > "$tmp/units/coord-broken.service"
complaints=$(verify coord-broken.service)
if [ -z "$complaints" ]; then
  echo "FAIL: a misspelt key in a unit went unnoticed"; exit 1
fi
echo "ok: a misspelt key is reported: $(printf '%s' "$complaints" | head -n1)"
exit 0
