# Generic rules shared by every component.
# Quiet by default, one line per target ("  CC  build/obj/x.o"); V=1 prints every command line in full.
ifeq ($(V),1)
Q :=
quiet =
else
Q := @
quiet = printf '  %-5s %s\n' '$(1)' '$@';
endif

# Objects: $(BUILD)/obj/<path>.o (release flags) and $(BUILD)/san/<path>.o (sanitizers, for tests).
# Flags per folder: <folder>_CFLAGS, the variable named by the folder's path (`trainer_CFLAGS`,
# `tests/collective_CFLAGS`). A source takes those of the deepest folder above it that has them, and only
# those, so a component's tests get its flags by naming their folder (tests/collective_CFLAGS :=
# $(libcollective_CFLAGS)), with no rule of their own and nothing shared between components.
up-dirs = $(if $(filter-out . ./,$(1)),$(1) $(call up-dirs,$(patsubst %/,%,$(dir $(1)))))
flags-dir = $(firstword $(foreach d,$(call up-dirs,$(patsubst %/,%,$(dir $(1)))),$(if $(filter undefined,$(origin $(d)_CFLAGS)),,$(d))))
dirflags = $($(call flags-dir,$(1))_CFLAGS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(call quiet,CC)$(CC) $(BASE_CFLAGS) $(call dirflags,$<) -c $< -o $@

$(BUILD)/san/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(call quiet,CC)$(CC) $(SAN_CFLAGS) $(call dirflags,$<) -c $< -o $@

# obj-of / san-of: map a list of sources to their objects.
obj-of = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
san-of = $(patsubst %.c,$(BUILD)/san/%.o,$(1))

# install-man: a manual page (mdoc source, installed as is) into MANDIR/man<section>, section from its suffix.
install-man = install -D -m 0644 $(1) $(DESTDIR)$(MANDIR)/man$(patsubst .%,%,$(suffix $(1)))/$(notdir $(1))
