# Developer commands (DESIGN.md §7). All logic lives in scripts/; these targets only call it.
.PHONY: run stop test install setup status bench doctor package

run:      ## install what is missing, build+install, start cluster + edge, load the app, print dev.env
	@scripts/run.sh
stop:     ## stop what `make run` started (recorded pids); data is kept
	@scripts/stop.sh
test:     ## every suite: unit/pg_test, SQL regression, end-to-end, conformance
	@scripts/test.sh
install:  ## build the extension (release) and install it into the system PostgreSQL (scripts/lib.sh PG_MAJOR, default 15)
	@scripts/setup.sh run && scripts/install.sh
package:  ## release build packaged under target/release: staged usr/ tree, .tar.gz and .deb (installs nothing)
	@scripts/setup.sh run && scripts/package.sh
setup:    ## install whatever make test needs that is missing (make run installs only what running needs)
	@scripts/setup.sh
status:   ## is the dev cluster running?
	@CHUMBO_CLUSTER=dev scripts/cluster.sh status || true
bench:    ## benchmarks (not part of test): chumbo vs the floor and vs a reference SDK server; writes bench/RESULTS.md
	@bench/run.sh
doctor:   ## check a deployed MCP server from outside: make doctor URL=<MCP URL> [TOKEN=<access token>]
	@$(if $(TOKEN),MCP_TOKEN='$(TOKEN)') scripts/doctor.sh "$(URL)"
