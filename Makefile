# fusec: ahead-of-time fusion compiler. See README.md.
#
# make            build build/fusec
# make deps       install the Debian packages fusec needs (root)
# make test       unit tests (cmocka) and CLI tests
# make sanitize   the same under ASan and UBSan, in build-san/
# make clean

BUILD       ?= build
LLVM_CONFIG ?= llvm-config-19
PKG_CONFIG  ?= pkg-config
CC          ?= cc
WERROR      ?=

WARN    = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
          -Wno-unused-parameter -Wvla $(WERROR)
CFLAGS ?= -O2 -g
DEPS_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcjson yaml-0.1 2>/dev/null) \
               -I$(shell $(LLVM_CONFIG) --includedir 2>/dev/null)
DEPS_LIBS   := $(shell $(PKG_CONFIG) --libs libcjson yaml-0.1 2>/dev/null) \
               $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) \
               $(shell $(LLVM_CONFIG) --libs 2>/dev/null) -lm
CMOCKA_CFLAGS := $(shell $(PKG_CONFIG) --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) $(DEPS_CFLAGS) -MMD -MP

# Sources, per layer. Keep each list sorted.
LIB_SRC     = lib/support.c
IR_SRC      = ir/liveness.c ir/ops.c ir/relative.c
PASSES_SRC  =
CODEGEN_SRC =
CMD_SRC     = cmd/fusec.c cmd/normalize.c
TEST_SRC    = tests/unit/main.c tests/unit/test_relative.c

CORE_SRC = $(LIB_SRC) $(IR_SRC) $(PASSES_SRC) $(CODEGEN_SRC)
CORE_OBJ = $(CORE_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ  = $(CMD_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)

all: $(BUILD)/fusec

$(BUILD)/fusec: $(CORE_OBJ) $(CMD_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(DEPS_LIBS)

$(BUILD)/unit: $(CORE_OBJ) $(TEST_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(DEPS_LIBS) $(CMOCKA_LIBS)

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# CLI tests first, the cmocka run last: `make test` ends with its summary line.
test: $(BUILD)/fusec $(BUILD)/unit
	FUSEC=$(BUILD)/fusec sh tests/cli/run.sh
	cd tests && ../$(BUILD)/unit

sanitize:
	$(MAKE) BUILD=build-san CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

deps:
	@missing=""; for p in llvm-19-dev libcjson-dev libyaml-dev libcmocka-dev pkg-config make gcc; do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else echo "all dependencies present"; fi

clean:
	rm -rf build build-san

.PHONY: all test sanitize deps clean
-include $(CORE_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
