# deploy/deb.mk — the Debian package (make deb)
