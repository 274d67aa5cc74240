#!/usr/bin/env bash
# Times `make test` as CI runs it (CI=true .ci/run) on a fresh clone of the
# committed HEAD, by phase, and records it in bench-results/make-test/.
#
#   hack/time-make-test.sh [--empty-go-caches]   run it, then record it
#   hack/time-make-test.sh --from-log LOG CACHES  record a run's timed log
#
# The clone goes to a new directory under ${TMPDIR:-/tmp}, next to a link to
# the repository's sibling shared/ (the design documents some checks read).
# --empty-go-caches gives the run a module cache and a build cache of its
# own, both empty, as on a new machine; otherwise it uses this machine's.
# Each line of the run's output is prefixed with the seconds since it began
# ([   42] ...), in <clone>/../make-test.log. Run it on an otherwise quiet
# machine: the figure is what the machine gives the run. As root, like CI.
#
# The record, bench-results/make-test/<UTC start>-<commit>.json, holds the
# total, the phases (tools: hack/build-tools.sh; checks: make verify's
# gofmt, vet, generated code and release check; tests: go test of every
# package with the real Keystone + Neutron up; e2e and fuzz: make test-e2e
# with the fuzz targets beside it), whether it passed, and the slowest
# packages. `make docs` renders them into docs/reference/make-test.md. A
# run that stops before its last phase (make stops at the first failing
# step) has no figure to record: it is reported, not recorded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/bench-results/make-test"

die() { echo "time-make-test: $*" >&2; exit 1; }

# record LOG CACHES COMMIT START writes the record of the timed log LOG.
record() {
	local log="$1" caches="$2" commit="$3" start="$4"
	local total rc
	total="$(sed -n 's/^rc=[0-9]* secs=\([0-9]*\).*/\1/p' "$log" | tail -1)"
	rc="$(sed -n 's/^rc=\([0-9]*\) .*/\1/p' "$log" | tail -1)"
	[[ -n "$total" && -n "$rc" ]] || die "$log: no final 'rc=<code> secs=<seconds>' line: the run did not finish"
	at() { sed -n "s#^\[ *\([0-9]*\)\] $1.*#\1#p" "$log" | head -1; }
	local checks tests e2e
	checks="$(at 'hack/verify-gofmt.sh')"
	tests="$(at 'hack/with-openstack.sh go test')"
	e2e="$(at 'E2E_NODE=')"
	[[ -n "$checks" && -n "$tests" && -n "$e2e" ]] || die "$log: a phase's first line is missing (hack/verify-gofmt.sh, hack/with-openstack.sh go test, E2E_NODE=)"
	local result=pass
	[[ "$rc" == 0 ]] || result=fail
	local packages
	packages="$(sed -n 's/^\[ *[0-9]*\] ok  	github.com\/kube-sample\/controller-manager\/\([^	]*\)	\([0-9.]*\)s.*/\2 \1/p' "$log" |
		sort -rn | head -8 | awk '{printf "%s{\"package\": \"%s\", \"seconds\": %s}", (NR > 1 ? ", " : ""), $2, $1}')"
	mkdir -p "$OUT"
	local file="$OUT/$(date -u -d "@$start" +%Y%m%dT%H%M%SZ)-$commit.json"
	cat >"$file" <<EOF
{
  "commit": "$commit",
  "started": "$(date -u -d "@$start" +%Y-%m-%dT%H:%M:%SZ)",
  "goCaches": "$caches",
  "machine": {"cores": $(nproc), "ramBytes": $(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024))},
  "result": "$result",
  "seconds": $total,
  "phases": [
    {"name": "tools", "seconds": $checks},
    {"name": "checks", "seconds": $((tests - checks))},
    {"name": "tests", "seconds": $((e2e - tests))},
    {"name": "e2e and fuzz", "seconds": $((total - e2e))}
  ],
  "slowestPackages": [$packages]
}
EOF
	echo ">> $file"
}

case "${1:-}" in
--from-log)
	[[ $# == 3 ]] || die "usage: $0 --from-log LOG empty|warm"
	log="$2" caches="$3"
	[[ "$caches" == empty || "$caches" == warm ]] || die "the Go caches are 'empty' or 'warm', not '$caches'"
	read -r commit start < <(sed -n 's/^start \([0-9]*\) commit \([0-9a-f]*\)$/\2 \1/p' "$log" | head -1) ||
		die "$log: no 'start <unix time> commit <hash>' line"
	record "$log" "$caches" "$commit" "$start"
	exit 0
	;;
--empty-go-caches) caches=empty ;;
"") caches=warm ;;
*) die "usage: $0 [--empty-go-caches] | --from-log LOG empty|warm" ;;
esac

dir="$(mktemp -d "${TMPDIR:-/tmp}/make-test.XXXX")"
git clone -q "$ROOT" "$dir/main"
[[ -d "$ROOT/../shared" ]] && ln -s "$(cd "$ROOT/../shared" && pwd)" "$dir/shared"
if [[ "$caches" == empty ]]; then
	mkdir -p "$dir/gomodcache" "$dir/gocache"
	export GOMODCACHE="$dir/gomodcache" GOCACHE="$dir/gocache"
fi
commit="$(git -C "$dir/main" rev-parse --short=7 HEAD)"
log="$dir/make-test.log"
start="$(date +%s)"
echo "start $start commit $commit" >"$log"
echo ">> timing make test of $commit in $dir/main (Go caches: $caches); its output: $log"
set +e
(cd "$dir/main" && CI=true bash .ci/run 2>&1) | while IFS= read -r line; do
	printf '[%5d] %s\n' "$(($(date +%s) - start))" "$line"
done >>"$log"
rc="${PIPESTATUS[0]}"
set -e
echo "rc=$rc secs=$(($(date +%s) - start))" >>"$log"
record "$log" "$caches" "$commit" "$start"
if [[ "$caches" == empty ]]; then
	chmod -R u+w "$dir/gomodcache" && rm -rf "$dir/gomodcache" "$dir/gocache" # gigabytes
fi
exit "$rc"
