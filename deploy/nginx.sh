#!/bin/sh
# Run by the nginx image at start (/docker-entrypoint.d): installs docs/nginx.conf with its
# upstream block listing $TEXTGATEWAY_UPSTREAMS (host:port, separated by spaces) instead of
# the two loopback instances the file names.
set -eu
servers=""
for address in $TEXTGATEWAY_UPSTREAMS; do
    servers="$servers    server $address max_fails=1 fail_timeout=5s;\n"
done
awk -v servers="$servers" '
    /^    server 127\.0\.0\.1:808[0-9] / { if (!done) { printf "%s", servers; done = 1 } next }
    { print }
' /etc/textgateway/nginx.conf | sed 's|/var/log/nginx/text-gateway.access.log|/dev/stdout|' >/etc/nginx/conf.d/default.conf
