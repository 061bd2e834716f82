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
# A component sets per-directory flags with <dir>_CFLAGS, e.g. `spank_plugin_CFLAGS := ...`.

dirflags = $($(subst /,_,$(firstword $(subst /, ,$(1))))_CFLAGS)

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
