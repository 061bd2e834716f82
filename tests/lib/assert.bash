# shellcheck shell=bash disable=SC2034 # failed is read by the tests that source this file
# tests/lib/assert.bash: the shell tests' two ways to fail, one meaning each (sourced; tests/README.md).
#   fail MSG...        the test cannot go on: "FAIL: [NAME: ]MSG" on stderr, exit 1 (NAME: the test's name,
#                      where the test or its lib sets it)
#   check_fail MSG...  one check failed and the test goes on to the next: "FAIL: MSG" on stderr, counted in
#                      $failed; the test ends with `[ "$failed" -eq 0 ] || exit 1`
failed=0
fail() { echo "FAIL: ${NAME:+$NAME: }$*" >&2; exit 1; }
check_fail() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }
