# tests/integration/screenshot.mk — `make screenshot`: the README's picture of
# `d9 serve` (docs/img/viewer-finding.png), a finding and its evidence, taken by
# the browser test (test_serve_browser.sh) on its store with known findings.
# Included by the top Makefile; not part of make test.
.PHONY: screenshot
screenshot: all $(PROG_BINS)
	@mkdir -p docs/img
	BUILD=$(BUILD) D9_SCREENSHOT=docs/img/viewer-finding.png sh tests/integration/test_serve_browser.sh
