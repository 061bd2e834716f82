# tests/structure/: layers call only down, components stand alone (check-structure.sh; layers.conf says
# which file is in which layer). Part of make check, and alone as make check-structure.
.PHONY: check-structure
check-structure:
	tests/structure/check-structure.sh
TESTS += tests/structure/check-structure.sh
