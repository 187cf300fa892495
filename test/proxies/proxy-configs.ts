// The configuration of each proxy in front of the app, as the deployment tests run it: HTTP/1.1 towards
// the app; towards clients HTTP/1.1, and cleartext HTTP/2 on `h2port` (nginx, HAProxy) or on the same
// port (Caddy, Varnish, which the harness starts with `feature=+http2`).
import { nginxPreamble, nginxTempPaths, type ProxyPlace } from './proxy-harness'

/** nginx proxying to the app, with `gzip` (its gzip directives, or `gzip off;`). */
export function nginxConfig (place: ProxyPlace, gzip: string): string {
  return `${nginxPreamble(place.dir)}
http {
  access_log off;
  ${nginxTempPaths(place.dir)}
  server {
    listen 127.0.0.1:${place.port};
    listen 127.0.0.1:${place.h2port} http2;
    ${gzip}
    location / {
      proxy_pass http://127.0.0.1:${place.upstream};
      proxy_http_version 1.1;
    }
  }
}
`
}

/** Caddy's reverse_proxy to the app: `site`, directives of the site (`encode gzip`); `reverseProxy`, its block. */
export function caddyConfig (place: ProxyPlace, site: string, reverseProxy = ''): string {
  return `{
  admin off
  auto_https off
  servers {
    protocols h1 h2c
  }
}
http://127.0.0.1:${place.port} {
  ${site}
  reverse_proxy 127.0.0.1:${place.upstream} ${reverseProxy}
}
`
}

/** HAProxy with `frontend`, directives of its frontend (`compression algo gzip`). */
export function haproxyConfig (place: ProxyPlace, frontend: string): string {
  return `global
  maxconn 64
defaults
  mode http
  timeout connect 5s
  timeout client 10s
  timeout server 10s
frontend f
  bind 127.0.0.1:${place.port}
  bind 127.0.0.1:${place.h2port} proto h2
  ${frontend}
  default_backend b
backend b
  server s1 127.0.0.1:${place.upstream}
`
}

/** Varnish with the app as its backend and `vcl` (subroutines) on top of the builtin VCL. */
export function varnishConfig (place: ProxyPlace, vcl: string): string {
  return `vcl 4.1;
backend default { .host = "127.0.0.1"; .port = "${place.upstream}"; }
${vcl}
`
}
