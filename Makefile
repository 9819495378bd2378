# habench: benchmark MySQL HA topologies side by side.
#   make demo   installs what is missing, builds, runs scenarios/quick.yaml on real local servers
#   make test   installs what is missing, builds, runs unit + real-server end-to-end tests
#   make check  gofmt, vet, unit tests and one real-server smoke test (the edit loop)

GO       ?= go
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
BIN      := bin/habench
# Real-server tests must not skip in `make test`: a missing server is a failure. The network
# guard keeps every test and benchmark on this machine: loopback and local namespaces only,
# no name lookups (habench itself connects wherever the user says).
GUARD    := HABENCH_TEST_NETWORK_GUARD=1
# The test servers' performance schema without the statement history, digest and error
# summaries, with room for 10 accounts, hosts and users, and an 8 MB InnoDB log buffer
# (cluster.TestServerOptionsEnv; no test reads those tables or fills 8 MB of log at once):
# a MySQL 9.7 start 2.2 -> 1.3 s of CPU, 535 -> 300 MB (scripts/mysqld-start-cpu.sh -n 6).
# make test and make check only: the benchmarks measure servers as users deploy them.
TESTSERVEROPTS := performance_schema_events_statements_history_long_size=0 performance_schema_events_stages_history_long_size=0 performance_schema_events_waits_history_long_size=0 performance_schema_events_transactions_history_long_size=0 performance_schema_digests_size=0 performance_schema_error_size=0 performance_schema_accounts_size=10 performance_schema_hosts_size=10 performance_schema_users_size=10 innodb_log_buffer_size=8M
TESTENV  := HABENCH_REQUIRE_SERVERS=1 $(GUARD)
# Three packages at a time, two tests at a time within each: 6 tests at most, every test's
# names, ports, subnets and namespaces handed out by internal/testmachine and testenv. At
# -parallel 1 the suite took 31 min; at -parallel 2 about 24 min on disk, and -parallel 2
# used to fail 1-4 tests a run on timing until their waits were made to poll (a stop, a
# sample, a move caught mid-view-change); -parallel 4 overloaded the 2 cores (load 12-27).
# -p 2 left the cores 30-60% idle for the first 3 minutes (cmd/habench's and cluster's
# tests waiting for restarts held all 4 slots while experiment's waited to start). The
# CLI tests use the bin/habench just built.
TESTFLAGS ?= -count=1 -p 3 -parallel 2 -timeout 60m
# cmd/habench's tests 3 at a time (its TestMain reads HABENCH_TEST_CLI_PARALLEL): they mostly
# wait for the servers of the habench processes they run, and with 2 that package, the
# last to end, ran alone for 160 s with the cores 30-80% idle.
CLIPARALLEL ?= 3
# At most 6 real-server tests at once, machine-wide (internal/testmachine.Share waits for
# a slot): -p 3 with cmd/habench's third slot ran up to 8, and at load 21 a MySQL query
# took over 2 s (TestWaitConsistentWaitsForOnlineMembers failed); -p 3 alone, at most 6,
# passed at load 17. The slots go to whoever waits when another package is done.
MAXSHARED ?= 6
# The summary after the run: the failing tests' output first, the wall time, each
# package's time, the 25 slowest tests, every test over 60 s and each skipped test with its
# reason (internal/cmd/testsummary over go test -json); the whole stream in TESTJSON.
TESTJSON ?= $(CURDIR)/bin/test.json
TESTSUMMARY := bin/testsummary

.PHONY: all build deps rootfs rootfs-mariadb test testprep check unit demo lint bench bench-netem bench-deploy bench-snapshot clean clean-cache

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/habench

deps:
	bash scripts/install-deps.sh

rootfs:
	bash scripts/mysql-rootfs.sh

# Optional: Debian sid's MariaDB (11.8) + galera-4 for version comparisons (~2.5 min, 730 MB;
# not part of deps or test). Use it with installation: {kind: rootfs} and flavor mariadb.
rootfs-mariadb:
	bash scripts/mariadb-rootfs.sh

# The tests that measure (they call testmachine.Alone: round trips, rates, clock offsets,
# CPU saturation) run after the others, one at a time, on a machine nothing else loads.
ALONE = $(shell $(GO) run ./internal/cmd/alonetests)
ALONEFLAGS ?= -count=1 -p 1 -timeout 20m

# As root the tests run in a mount namespace of their own whose /tmp and root filesystems'
# /habench and /tmp are tmpfs (scripts/test-on-tmpfs.sh: what they write goes with the
# namespace, also after a killed run). So TESTJSON must not be under /tmp.
test:
	@$(MAKE) --no-print-directory -j2 deps testprep
	$(TESTENV) HABENCH_TEST_SERVER_OPTIONS="$(TESTSERVEROPTS)" HABENCH_TEST_BIN=$(CURDIR)/$(BIN) bash scripts/test-on-tmpfs.sh ./$(TESTSUMMARY) -json $(TESTJSON) -- sh -c '\
	  HABENCH_TEST_CLI_PARALLEL=$(CLIPARALLEL) HABENCH_TEST_MAX_SHARED=$(MAXSHARED) $(GO) test -json $(TESTFLAGS) -skip "$(ALONE)" ./...; side=$$?; \
	  $(GO) test -json $(ALONEFLAGS) -run "$(ALONE)" ./...; alone=$$?; \
	  [ $$side = 0 ] && [ $$alone = 0 ]'

# What make test compiles, beside deps (on a fresh machine each takes about 2 minutes, deps
# mostly downloading and unpacking, the compiler CPU): the binary, the summary tool and every
# package's test binary and vet check, into the Go build cache, run by the go test above.
testprep: build $(TESTSUMMARY)
	$(GO) test -count=1 -run '^$$' -exec true ./... >/dev/null

$(TESTSUMMARY): $(wildcard internal/testsummary/*.go internal/cmd/testsummary/*.go)
	$(GO) build -o $(TESTSUMMARY) ./internal/cmd/testsummary

# The edit loop, under 3 minutes: gofmt, vet, the unit tests and one short real-server
# smoke test (a sandbox deployed, a run, a report). `make test` is the whole suite (CI).
check: build $(TESTSUMMARY)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GUARD) ./$(TESTSUMMARY) -slowest 10 -- $(GO) test -json -count=1 -short ./...
	$(TESTENV) HABENCH_TEST_SERVER_OPTIONS="$(TESTSERVEROPTS)" HABENCH_TEST_BIN=$(CURDIR)/$(BIN) ./$(TESTSUMMARY) -slowest 5 -- $(GO) test -json -count=1 -run '^TestSysbenchFlow$$' ./cmd/habench/

# Pure unit tests only (no servers, no root).
unit:
	$(GUARD) $(GO) test -count=1 -short ./...

demo: deps build
	./$(BIN) run scenarios/quick.yaml --results results

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Benchmarks: habench's workload engine against sysbench 1.0.20 on the same server, same run;
# then a run from 2 client processes of 4 threads against 1 of 8 (habench client-run, merged:
# TPS and CPU per event, alternating); then what a checker thread costs an 8-thread OLTP run
# (with/without, alternating).
bench: deps build
	$(GUARD) $(GO) test -tags bench -count=1 -run '^$$' -timeout 60m -bench OltpVsSysbench -benchtime 1x ./workload/
	$(TESTENV) HABENCH_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -tags bench -count=1 -run '^$$' -timeout 15m -bench ClientsSplit -benchtime 1x ./clients/
	$(TESTENV) $(GO) test -tags bench -count=1 -run '^$$' -timeout 15m -bench CheckerCost -benchtime 1x ./experiment/

# Link impairment, userspace link (root): added RTT at 0.6 ms and 5 ms one-way and bulk
# throughput between two namespaces; then on 3-node MariaDB semi-sync sandboxes the TPS at
# zero delay against the plain bridge (A/B/A/B) and the added RTT under an oltp_read_write
# load (habench's engine, then sysbench). About 3 minutes. -v: the logs of benchmarks with
# sub-benchmarks (baselines, diagnostics) are printed only with it.
bench-netem:
	$(GUARD) $(GO) test -tags bench -count=1 -run '^$$' -bench Userspace -benchtime 1x ./netem/
	$(TESTENV) $(GO) test -tags bench -count=1 -timeout 15m -v -run '^$$' -bench 'LinkZeroDelayTPS|LinkRTTUnderLoad' -benchtime 1x ./experiment/

# Deploy time (root): 3-node group (MySQL 9.7), Galera (MariaDB) and async (both), from
# nothing to ONLINE / Synced / replicating, DEPLOY_ROUNDS times each (default 3), with
# per-phase times from the sandbox's log and the load average. About 3 minutes.
DEPLOY_ROUNDS ?= 3
bench-deploy:
	$(TESTENV) $(GO) test -tags bench -count=1 -timeout 30m -v -run '^$$' -bench 'Deploy' -benchtime $(DEPLOY_ROUNDS)x ./cluster/

# Data snapshots (root): a 3-node group (MySQL) and Galera (MariaDB) with 8 x 1,000,000 rows,
# deploy + prepare against deploy from a snapshot of the same data. About 20 minutes, 12 GB
# of disk; HABENCH_BENCH_SNAPSHOT_ROWS=100000 for a quick look.
bench-snapshot:
	$(TESTENV) $(GO) test -tags bench -count=1 -timeout 60m -run '^$$' -bench SnapshotDeploy -benchtime 1x ./experiment/

clean:
	rm -rf bin

clean-cache:
	rm -rf /var/cache/habench/templates /var/cache/habench/rootfs/mysql-sid/habench/templates /var/cache/habench/rootfs/mariadb-sid/habench/templates
