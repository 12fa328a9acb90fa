#!/bin/sh
# Runs randomtransaction on Strata's dbbench and RocksDB's db_bench with the
# same command line: optimistic and pessimistic, 1 and 4 threads, REPS
# rounds, the two tools interleaved within each round (a busy machine drifts;
# interleaving spreads the drift over both). Raw output goes to stdout;
# scripts/bench-randomtransaction-summary.py tabulates the medians.
#
#	scripts/bench-randomtransaction.sh > docs/data/txn-randomtransaction-DATE.txt
#	scripts/bench-randomtransaction-summary.py < docs/data/txn-randomtransaction-DATE.txt
set -u
DBBENCH=${DBBENCH:-/tmp/strata-dbbench}
ROCKS=${ROCKS:-db_bench}
REPS=${REPS:-3}
DUR=${DUR:-10}
DIR=${DIR:-/tmp/rtx-bench}
go build -o "$DBBENCH" ./cmd/dbbench || exit 1
COMMON="-benchmarks=randomtransaction -num=10000 -duration=$DUR -transaction_sets=2 -transaction_lock_timeout=100 -transaction_sleep=0 -seed=1"
echo "# $(date -u) $(uname -srm) $(nproc) CPUs; $($ROCKS --version 2>&1 | head -1) (Debian's build, assertions on)"
for rep in $(seq 1 "$REPS"); do
	for kind in -optimistic_transaction_db -transaction_db; do
		for threads in 1 4; do
			for tool in strata rocksdb; do
				bin=$DBBENCH
				[ $tool = rocksdb ] && bin=$ROCKS
				rm -rf "$DIR"
				echo "## rep=$rep tool=$tool kind=$kind threads=$threads"
				echo "\$ $tool $COMMON $kind -threads=$threads -db=$DIR"
				{
					"$bin" $COMMON $kind -threads=$threads -db="$DIR"
					echo "rc=$?"
				} 2>&1 | tr '\r' '\n' | grep -v '^\.\.\. finished\|^ *$'
			done
		done
	done
done
rm -rf "$DIR"
