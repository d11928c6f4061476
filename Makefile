# The README's two commands are `make run` and `make test`; the rest are conveniences. `make test` is the full suite
# and CI's command; `make test-unit` is its fast tier, which needs no service.

# The tests need a PostgreSQL server they may create databases on. Defaults to the local one (trust auth).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export TEST_DATABASE_URL
# And a Redis server (shared rate limits, several replicas); nothing is persisted in it.
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
export TEST_REDIS_URL

# The end-to-end tests run the reference API's real clients (@openrouter/sdk, openai) from npm.
E2E_JS := test/e2e/js

.PHONY: run test test-unit test-deps build generate check bench bench-e2e fuzz soak

# What `switchboard version` prints: set at link time.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

# ARGS are the command's: make run ARGS="--config switchboard.yaml".
run:
	go run -ldflags "$(LDFLAGS)" ./cmd/switchboard $(ARGS)

test: test-deps $(E2E_JS)/node_modules/.package-lock.json
	go test -race -count=1 ./...

# The fast tier: no PostgreSQL, Redis, npm or espeak-ng; the tests that need one skip under -short and say which.
test-unit:
	go test -short -count=1 ./...

# A real speech engine for the end-to-end tests: espeak-ng, and lame for mp3, from the distribution's packages; and
# Debian's Chromium for the console's browser test (test/console). Without them (no apt, or not root) the tests that
# need them fail and say how to install them.
test-deps:
	@if ! command -v espeak-ng >/dev/null || ! command -v lame >/dev/null || [ ! -x /usr/bin/chromium ]; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng lame chromium >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng lame chromium >/dev/null 2>&1; } || true; \
	  fi; \
	fi

$(E2E_JS)/node_modules/.package-lock.json: $(E2E_JS)/package-lock.json
	cd $(E2E_JS) && npm ci --no-audit --no-fund --ignore-scripts && node node_modules/@anthropic-ai/claude-code/install.cjs

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/switchboard ./cmd/switchboard

generate:
	cd wire && go tool wire gen .

# What CI checks besides the tests: formatting, vet, and a current wire_gen.go.
check:
	@test -z "$$(gofmt -l cmd domain ports app adapters wire test)" || (gofmt -l cmd domain ports app adapters wire test; echo "gofmt needed"; exit 1)
	go vet ./...
	cd wire && go tool wire diff . >/dev/null || (echo "wire_gen.go is stale: run make generate"; exit 1)

bench:
	go test -run '^$$' -bench . -benchmem ./...

# Measures as a user does: the built binary, a fake upstream and the load generator as three processes, on SQLite
# and PostgreSQL (TEST_DATABASE_URL), gateway against direct in one run. BENCH_ARGS=-h lists the knobs.
bench-e2e:
	go run ./test/benche2e $(BENCH_ARGS)

# Go native fuzzing: each target for FUZZTIME (make test replays only the committed seeds). A failing input is
# written under the package's testdata/fuzz, where the normal run replays it from then on.
FUZZTIME ?= 1m
FUZZ_TARGETS := adapters/httpapi:FuzzBodies adapters/httpapi:FuzzIDsAndQueries adapters/httpapi:FuzzSpeechBody \
	adapters/inbound/chatcompletions:FuzzDecode adapters/internal/jsonenc:FuzzAppendString adapters/internal/jsonenc:FuzzIntact \
	adapters/spool:FuzzSegment adapters/upstream:FuzzScrub \
	adapters/upstream/anthropic:FuzzDecodeEvent adapters/upstream/gemini:FuzzDecodeResponse \
	adapters/upstream/openai:FuzzDecodeEvent adapters/upstream/openai:FuzzDecoderHead domain:FuzzMicrosMulDiv \
	adapters/inbound/chatcompletions:FuzzMessages adapters/inbound/chatcompletions:FuzzStreamOptions \
	domain/guardrail:FuzzContentFilters domain/generation:FuzzEntryBinary adapters/inbound:FuzzReadCarried

fuzz:
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $$t for $(FUZZTIME)"; \
	  go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*} || exit 1; \
	done

# The long accounting test: PostgreSQL cut for a full minute while speech calls go on (the default run cuts it
# for 2 s).
soak:
	SWITCHBOARD_OUTAGE=60s go test -race -count=1 -run 'TestOutageLosesNothing' -v ./test/api/
