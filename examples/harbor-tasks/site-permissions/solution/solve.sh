#!/bin/bash
# Reference solution: a system user, chown -h (links themselves, never their targets), find for the modes.
set -euo pipefail
id deploy >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin --gid www-data deploy
chown -R -h deploy:www-data /srv/site
find /srv/site -type d -exec chmod 2750 {} +
find /srv/site -type f -exec chmod 0640 {} +
find /srv/site/bin -maxdepth 1 -type f -exec chmod 0750 {} +
chmod 0600 /srv/site/config/secrets.env
