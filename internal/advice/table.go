package advice

import g "github.com/sse-latency/sse-latency/internal/gateway"

// The documentation the generic rows point to.
const (
	refSSE     = "https://html.spec.whatwg.org/multipage/server-sent-events.html"
	refOpenAI  = "https://platform.openai.com/docs/api-reference/chat-streaming"
	refTCP     = "https://man7.org/linux/man-pages/man7/tcp.7.html"
	refHTTP    = "https://www.rfc-editor.org/rfc/rfc9112.html"
	refHTTP2   = "https://www.rfc-editor.org/rfc/rfc9113.html"
	refHAProxy = "https://docs.haproxy.org/2.6/configuration.html"
	refNginx   = "https://nginx.org/en/docs/http/ngx_http_proxy_module.html"
	refCaddy   = "https://caddyserver.com/docs/caddyfile/directives/reverse_proxy"
	refApache  = "https://httpd.apache.org/docs/2.4/mod/"
	refLighttp = "https://redmine.lighttpd.net/projects/lighttpd/wiki/"
	refEnvoy   = "https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/route/v3/route_components.proto"
	refKong    = "https://docs.konghq.com/gateway/latest/key-concepts/"
)

// Table is every piece of advice sse-latency gives: per finding, a
// generic row (gateway.Unknown) and the rows of the gateways that have a
// setting for it. Each row is rendered in a test; For picks them.
var Table = []Row{
	// A buffer released when it fills.
	{g.Unknown, ByteThreshold, "turn response buffering off for text/event-stream, or flush after every event instead of writing to a buffered writer", "", refSSE},
	{g.HAProxy, ByteThreshold, "set option http-no-delay: without it haproxy merges small writes into full packets",
		"defaults\n    option http-no-delay", refHAProxy + "#4.2-option%20http-no-delay"},
	{g.Nginx, ByteThreshold, "set proxy_buffering off for the streaming location, or have the backend send X-Accel-Buffering: no",
		"location /v1/ {\n    proxy_buffering off;\n}", refNginx + "#proxy_buffering"},
	{g.Caddy, ByteThreshold, "set flush_interval -1 in reverse_proxy (and no buffer_responses)",
		"reverse_proxy 127.0.0.1:8090 {\n    flush_interval -1\n}", refCaddy + "#streaming"},
	{g.Apache, ByteThreshold, "keep buffering output filters (BUFFER of mod_buffer, DEFLATE, SUBSTITUTE) off the streaming location",
		"<Location \"/v1/\">\n    SetEnv no-gzip 1\n</Location>", refApache + "mod_buffer.html"},
	{g.Lighttpd, ByteThreshold, "set server.stream-response-body = 2: stream the backend's response with minimal buffering",
		"server.stream-response-body = 2", refLighttp + "Server_stream-response-bodyDetails"},
	{g.Varnish, ByteThreshold, "stream the backend response: set beresp.do_stream = true (and no do_gzip or ESI) for text/event-stream",
		"sub vcl_backend_response {\n    if (beresp.http.Content-Type ~ \"text/event-stream\") {\n        set beresp.do_stream = true;\n        set beresp.do_gzip = false;\n        set beresp.uncacheable = true;\n    }\n}",
		"https://varnish-cache.org/docs/trunk/reference/vcl-var.html#beresp-do-stream"},
	{g.Kong, ByteThreshold, "set response_buffering to false on the route",
		"routes:\n  - name: llm\n    response_buffering: false", refKong + "routes/"},
	{g.Node, ByteThreshold, "write each event with res.write() and, behind the compression middleware, call res.flush() after it",
		"res.write(event);\nres.flush?.();", "http://expressjs.com/en/resources/middleware/compression.html"},
	{g.GoProxy, ByteThreshold, "set FlushInterval: -1 on the httputil.ReverseProxy (flush after every write)",
		"proxy := &httputil.ReverseProxy{FlushInterval: -1}", "https://pkg.go.dev/net/http/httputil#ReverseProxy"},
	{g.Cloudflare, ByteThreshold, "turn Response Buffering off for the zone (Network settings) and send Cache-Control: no-transform from the origin",
		"Cache-Control: no-cache, no-transform", "https://developers.cloudflare.com/network/response-buffering/"},

	// A periodic flush.
	{g.Unknown, TimePeriod, "set the gateway's flush interval to immediate: it releases what it holds on a timer", "", refSSE},
	{g.HAProxy, TimePeriod, "set option http-no-delay: without it haproxy corks small writes until a timer or a full packet releases them",
		"defaults\n    option http-no-delay", refHAProxy + "#4.2-option%20http-no-delay"},
	{g.Nginx, TimePeriod, "set proxy_buffering off for the streaming location, or have the backend send X-Accel-Buffering: no",
		"location /v1/ {\n    proxy_buffering off;\n}", refNginx + "#proxy_buffering"},
	{g.Caddy, TimePeriod, "set flush_interval -1 in reverse_proxy",
		"reverse_proxy 127.0.0.1:8090 {\n    flush_interval -1\n}", refCaddy + "#streaming"},
	{g.Lighttpd, TimePeriod, "set server.stream-response-body = 2",
		"server.stream-response-body = 2", refLighttp + "Server_stream-response-bodyDetails"},
	{g.Traefik, TimePeriod, "set responseForwarding.flushInterval to a negative value (flush after every write; the default is 100ms)",
		"http:\n  services:\n    llm:\n      loadBalancer:\n        responseForwarding:\n          flushInterval: \"-1\"",
		"https://doc.traefik.io/traefik/routing/services/#response-forwarding"},
	{g.GoProxy, TimePeriod, "set FlushInterval: -1 on the httputil.ReverseProxy (a positive interval flushes on a timer)",
		"proxy := &httputil.ReverseProxy{FlushInterval: -1}", "https://pkg.go.dev/net/http/httputil#ReverseProxy"},

	// Nagle's algorithm and delayed ACKs.
	{g.Unknown, Nagle, "set TCP_NODELAY on the gateway's client-side socket: Nagle's algorithm holds small writes until the peer's delayed ACK (~40 ms, 200 ms)", "", refTCP},
	{g.HAProxy, Nagle, "set option http-no-delay (haproxy sends with MSG_MORE otherwise)",
		"defaults\n    option http-no-delay", refHAProxy + "#4.2-option%20http-no-delay"},
	{g.Node, Nagle, "call socket.setNoDelay(true) on the client connections (server.on('connection'))",
		"server.on('connection', (s) => s.setNoDelay(true));", "https://nodejs.org/api/net.html#socketsetnodelaynodelay"},

	// An SSE parser one event behind.
	{g.Unknown, OneEventBehind, "end each event at its blank line: the gateway's SSE parser releases an event only when the next one starts", "", refSSE + "#event-stream-interpretation"},
	{g.Node, OneEventBehind, "dispatch each event at its blank line (an eventsource parser's onEvent), not when the next data: line arrives",
		"for (const block of buf.split('\\n\\n').slice(0, -1)) res.write(block + '\\n\\n');", refSSE + "#event-stream-interpretation"},

	// The whole response held.
	{g.Unknown, WholeResponse, "stream the response end to end: the gateway reads the upstream's whole response before it answers (response buffering, a body filter, logging or a check that needs the whole body)", "", refSSE},
	{g.HAProxy, WholeResponse, "remove http-response wait-for-body (and filters that need the whole body) from the streaming route; set option http-no-delay",
		"defaults\n    option http-no-delay", refHAProxy + "#4.2-http-response%20wait-for-body"},
	{g.Nginx, WholeResponse, "set proxy_buffering off for the streaming location (and no body filters such as sub_filter on it)",
		"location /v1/ {\n    proxy_buffering off;\n}", refNginx + "#proxy_buffering"},
	{g.Caddy, WholeResponse, "remove buffer_responses (response_buffers) from reverse_proxy and set flush_interval -1",
		"reverse_proxy 127.0.0.1:8090 {\n    flush_interval -1\n}", refCaddy + "#streaming"},
	{g.Apache, WholeResponse, "keep buffering output filters (BUFFER of mod_buffer, SUBSTITUTE, DEFLATE) off the streaming location",
		"<Location \"/v1/\">\n    SetEnv no-gzip 1\n</Location>", refApache + "mod_buffer.html"},
	{g.Lighttpd, WholeResponse, "set server.stream-response-body = 2: lighttpd's default (0) reads the backend's whole response before it sends any",
		"server.stream-response-body = 2", refLighttp + "Server_stream-response-bodyDetails"},
	{g.Varnish, WholeResponse, "set beresp.do_stream = true, and beresp.do_gzip = false, for text/event-stream in vcl_backend_response",
		"sub vcl_backend_response {\n    if (beresp.http.Content-Type ~ \"text/event-stream\") {\n        set beresp.do_stream = true;\n        set beresp.do_gzip = false;\n        set beresp.uncacheable = true;\n    }\n}",
		"https://varnish-cache.org/docs/trunk/reference/vcl-var.html#beresp-do-stream"},
	{g.Envoy, WholeResponse, "remove the filter that buffers response bodies from the streaming route (ext_proc with response_body_mode BUFFERED, a Lua body() call)",
		"processing_mode:\n  response_body_mode: STREAMED", "https://www.envoyproxy.io/docs/envoy/latest/api-v3/extensions/filters/http/ext_proc/v3/processing_mode.proto"},
	{g.Kong, WholeResponse, "set response_buffering to false on the route",
		"routes:\n  - name: llm\n    response_buffering: false", refKong + "routes/"},
	{g.Node, WholeResponse, "pipe the upstream response as it comes (proxyRes.pipe(res)) instead of collecting it (selfHandleResponse, await res.text())",
		"proxy.on('proxyRes', (proxyRes, req, res) => proxyRes.pipe(res));", "https://github.com/http-party/node-http-proxy#listening-for-proxy-events"},
	{g.LiteLLM, WholeResponse, "pass stream: true upstream, and run output (post_call) guardrails only where the whole answer may wait",
		"guardrails:\n  - guardrail_name: check\n    litellm_params:\n      mode: pre_call", "https://docs.litellm.ai/docs/proxy/guardrails/quick_start"},
	{g.Cloudflare, WholeResponse, "turn Response Buffering off for the zone (Network settings) and send Cache-Control: no-transform from the origin",
		"Cache-Control: no-cache, no-transform", "https://developers.cloudflare.com/network/response-buffering/"},

	// An event loop forwarding chunks in batches.
	{g.Unknown, DispatchBursts, "forward each chunk as it comes: a busy or blocking event loop, or slow per-chunk work, releases chunks in batches", "", refSSE},
	{g.HAProxy, DispatchBursts, "set option http-no-delay: without it haproxy merges small writes, and a busy machine releases them at irregular times",
		"defaults\n    option http-no-delay", refHAProxy + "#4.2-option%20http-no-delay"},
	{g.Nginx, DispatchBursts, "set proxy_buffering off for the streaming location, or have the backend send X-Accel-Buffering: no",
		"location /v1/ {\n    proxy_buffering off;\n}", refNginx + "#proxy_buffering"},
	{g.Caddy, DispatchBursts, "set flush_interval -1 in reverse_proxy",
		"reverse_proxy 127.0.0.1:8090 {\n    flush_interval -1\n}", refCaddy + "#streaming"},
	{g.Lighttpd, DispatchBursts, "set server.stream-response-body = 2",
		"server.stream-response-body = 2", refLighttp + "Server_stream-response-bodyDetails"},
	{g.Node, DispatchBursts, "keep the event loop free: no synchronous work per chunk (JSON re-serialisation, logging), and write each chunk as it arrives",
		"upstream.on('data', (chunk) => res.write(chunk));", "https://nodejs.org/en/learn/asynchronous-work/dont-block-the-event-loop"},
	{g.LiteLLM, DispatchBursts, "give the proxy more workers (--num_workers) and keep logging callbacks off the request path",
		"litellm --config config.yaml --num_workers 4", "https://docs.litellm.ai/docs/proxy/prod"},
	{g.Portkey, DispatchBursts, "keep hooks on streaming routes asynchronous (async: true) and the gateway's event loop free",
		"\"output_guardrails\": [{\"id\": \"...\", \"async\": true}]", "https://portkey.ai/docs/aigw/product/guardrails/capabilities"},

	// Compression that holds the stream.
	{g.Unknown, Compression, "exclude text/event-stream from response compression, or flush the compressor after every event", "", refSSE},
	{g.HAProxy, Compression, "leave text/event-stream out of compression type",
		"compression algo gzip\ncompression type text/html text/plain", refHAProxy + "#4.2-compression"},
	{g.Nginx, Compression, "leave text/event-stream out of gzip_types, or have the backend send X-Accel-Buffering: no (nginx then flushes the compressor after each event)",
		"gzip_types text/plain application/json;", "https://nginx.org/en/docs/http/ngx_http_gzip_module.html#gzip_types"},
	{g.Caddy, Compression, "limit encode to other content types with a match block",
		"encode gzip {\n    match {\n        header Content-Type text/html*\n    }\n}", "https://caddyserver.com/docs/caddyfile/directives/encode"},
	{g.Apache, Compression, "set no-gzip for the streaming location, or leave text/event-stream out of AddOutputFilterByType DEFLATE",
		"<Location \"/v1/\">\n    SetEnv no-gzip 1\n</Location>", refApache + "mod_deflate.html"},
	{g.Lighttpd, Compression, "leave text/event-stream out of deflate.mimetypes",
		"deflate.mimetypes = (\"text/html\", \"text/plain\")", refLighttp + "Mod_deflate"},
	{g.Varnish, Compression, "set beresp.do_gzip = false for text/event-stream (Varnish gzips the whole object)",
		"sub vcl_backend_response {\n    if (beresp.http.Content-Type ~ \"text/event-stream\") {\n        set beresp.do_gzip = false;\n    }\n}",
		"https://varnish-cache.org/docs/trunk/users-guide/compression.html"},
	{g.H2O, Compression, "turn compress off for the streaming path",
		"paths:\n  /v1/:\n    proxy.reverse.url: http://127.0.0.1:8090/v1/\n    compress: OFF", "https://h2o.examp1e.net/configure/compress_directives.html"},
	{g.TrafficServer, Compression, "list the compress plugin's compressible-content-type without text/event-stream (text/* includes it)",
		"compressible-content-type text/html\ncompressible-content-type application/json", "https://docs.trafficserver.apache.org/en/latest/admin-guide/plugins/compress.en.html"},
	{g.Envoy, Compression, "leave text/event-stream out of the compressor filter's content_type list",
		"response_direction_config:\n  common_config:\n    content_type: [\"application/json\", \"text/html\"]",
		"https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/compressor_filter"},
	{g.Traefik, Compression, "add text/event-stream to the compress middleware's excludedContentTypes",
		"http:\n  middlewares:\n    compress:\n      compress:\n        excludedContentTypes: [\"text/event-stream\"]", "https://doc.traefik.io/traefik/middlewares/http/compress/"},
	{g.Node, Compression, "call res.flush() after each event (the compression middleware adds it), or skip compression for text/event-stream with its filter",
		"app.use(compression({ filter: (req, res) => !/event-stream/.test(res.getHeader('Content-Type')) }));",
		"http://expressjs.com/en/resources/middleware/compression.html"},
	{g.Cloudflare, Compression, "send Cache-Control: no-transform from the origin, or turn compression off for text/event-stream with a Compression Rule",
		"Cache-Control: no-cache, no-transform", "https://developers.cloudflare.com/rules/compression-rules/"},

	// The first event held.
	{g.Unknown, FirstTokenHold, "the gateway holds the first event (to inspect, route or moderate it): run such checks before the upstream call, or asynchronously", "", refOpenAI},
	{g.LiteLLM, FirstTokenHold, "run the guardrail as pre_call: during_call and post_call guardrails hold the stream until they pass",
		"guardrails:\n  - guardrail_name: check\n    litellm_params:\n      mode: pre_call", "https://docs.litellm.ai/docs/proxy/guardrails/quick_start"},
	{g.Portkey, FirstTokenHold, "run guardrails with async: true on streaming routes: synchronous ones gate the stream",
		"\"input_guardrails\": [{\"id\": \"...\", \"async\": true}]", "https://portkey.ai/docs/aigw/product/guardrails/capabilities"},

	// The head or first event held until after the think.
	{g.Unknown, HeldStart, "send the response head as soon as the upstream does: the gateway waits for the first token (a routing or guardrail decision) before it answers", "", refOpenAI},
	{g.Nginx, HeldStart, "set proxy_buffering off: nginx sends the head with the first buffered data",
		"location /v1/ {\n    proxy_buffering off;\n}", refNginx + "#proxy_buffering"},
	{g.LiteLLM, HeldStart, "run the guardrail as pre_call: during_call and post_call guardrails hold the response until they pass",
		"guardrails:\n  - guardrail_name: check\n    litellm_params:\n      mode: pre_call", "https://docs.litellm.ai/docs/proxy/guardrails/quick_start"},
	{g.Portkey, HeldStart, "run guardrails with async: true on streaming routes: synchronous ones gate the stream",
		"\"input_guardrails\": [{\"id\": \"...\", \"async\": true}]", "https://portkey.ai/docs/aigw/product/guardrails/capabilities"},

	// Reasoning and tool calls.
	{g.Unknown, ReasoningDropped, "pass the reasoning deltas through (delta.reasoning_content or delta.reasoning, the Responses API's reasoning events)", "", refOpenAI},
	{g.Unknown, ReasoningConverted, "keep reasoning in its own field: the gateway merged it into the visible content", "", refOpenAI},
	{g.Unknown, ArgumentsHeld, "forward tool-call argument deltas as they come instead of assembling the whole call", "", refOpenAI},

	// Silences cut.
	{g.Unknown, IdleCut, "raise the gateway's upstream read or idle timeout above the longest silence of an answer, or have the upstream send heartbeats", "", refSSE},
	{g.HAProxy, IdleCut, "raise timeout server above the longest silence of an answer",
		"defaults\n    timeout server 10m", refHAProxy + "#4.2-timeout%20server"},
	{g.Nginx, IdleCut, "raise proxy_read_timeout (60s by default) above the longest silence of an answer",
		"location /v1/ {\n    proxy_read_timeout 600s;\n}", refNginx + "#proxy_read_timeout"},
	{g.Caddy, IdleCut, "raise the transport's read_timeout, if set, above the longest silence of an answer",
		"reverse_proxy 127.0.0.1:8090 {\n    transport http {\n        read_timeout 10m\n    }\n}", refCaddy + "#the-http-transport"},
	{g.Apache, IdleCut, "raise ProxyTimeout (Timeout, 60 s by default) or the ProxyPass timeout= above the longest silence of an answer",
		"ProxyPass \"/\" \"http://127.0.0.1:8090/\" timeout=600", refApache + "mod_proxy.html#proxytimeout"},
	{g.Lighttpd, IdleCut, "raise the backend's read-timeout in proxy.server above the longest silence of an answer",
		"proxy.server = (\"\" => ((\"host\" => \"127.0.0.1\", \"port\" => 8090, \"read-timeout\" => 600)))", refLighttp + "Mod_proxy"},
	{g.Varnish, IdleCut, "raise between_bytes_timeout (60 s by default) on the backend",
		"backend default {\n    .host = \"127.0.0.1\";\n    .port = \"8090\";\n    .between_bytes_timeout = 600s;\n}", "https://varnish-cache.org/docs/trunk/reference/vcl-backend.html"},
	{g.Squid, IdleCut, "raise read_timeout (15 minutes by default) above the longest silence of an answer",
		"read_timeout 30 minutes", "https://www.squid-cache.org/Doc/config/read_timeout/"},
	{g.H2O, IdleCut, "raise proxy.timeout.io (30 s by default) above the longest silence of an answer",
		"proxy.timeout.io: 600000", "https://h2o.examp1e.net/configure/proxy_directives.html#proxy.timeout.io"},
	{g.TrafficServer, IdleCut, "raise proxy.config.http.transaction_no_activity_timeout_out (30 s by default)",
		"records:\n  http:\n    transaction_no_activity_timeout_out: 600", "https://docs.trafficserver.apache.org/en/latest/admin-guide/files/records.yaml.en.html"},
	{g.Envoy, IdleCut, "set the route's timeout to 0s (its 15 s default bounds the whole stream) and raise idle_timeout",
		"route:\n  cluster: llm\n  timeout: 0s\n  idle_timeout: 600s", refEnvoy + "#envoy-v3-api-field-config-route-v3-routeaction-timeout"},
	{g.Kong, IdleCut, "raise the service's read_timeout (60000 ms by default)",
		"services:\n  - name: llm\n    read_timeout: 600000", refKong + "services/"},
	{g.Cloudflare, IdleCut, "have the origin send a heartbeat (\": ping\") well within 100 s: Cloudflare ends a response silent that long (error 524)",
		": ping\n\n", "https://developers.cloudflare.com/support/troubleshooting/http-status-codes/cloudflare-5xx-errors/error-524/"},

	// Heartbeats.
	{g.Unknown, HeartbeatsSwallowed, "pass SSE comment lines (\": ping\") through: they keep idle connections open and show the client the stream is alive", "", refSSE},
	{g.Unknown, HeartbeatsInjected, "nothing to fix: the gateway writes heartbeats of its own; clients must ignore comments and ping events", "", refSSE},

	// The check's stream failures.
	{g.Unknown, LargeEvent, "raise the gateway's limit on one SSE line or event above 64 KB (Go's bufio.Scanner stops at 64 KB unless given a larger buffer)", "", refSSE},
	{g.Unknown, EventRebuilt, "the gateway re-serialises events (dropping fields it does not know): fine for the tokens, not for extension fields", "", refSSE},
	{g.Unknown, UTF8Split, "decode UTF-8 incrementally across reads (a streaming decoder), never each read on its own", "", refSSE},
	{g.Unknown, LineEndings, "parse SSE per the specification: lines end in CRLF, LF or CR; lines starting with ':' are comments", "", refSSE + "#parsing-an-event-stream"},
	{g.Unknown, SSEFraming, "read the upstream's event stream as the SSE specification does — strip one BOM at its start, join an event's data lines with a line feed and dispatch it at its blank line, take its event line wherever it stands before that — or pass the bytes through untouched", "", refSSE + "#event-stream-interpretation"},
	{g.Unknown, UsageDropped, "pass the usage request upstream (stream_options.include_usage) and the usage event back", "", refOpenAI},
	{g.Unknown, UsageRewritten, "pass the upstream's usage object on unchanged: keep prompt_tokens_details and the cache fields, a null as null (no figure is not zero), and the upstream's counts rather than the gateway's own", "", refOpenAI},
	{g.Unknown, TerminalDropped, "pass the upstream's end events ([DONE], message_stop, response.completed) unchanged", "", refOpenAI},
	{g.Unknown, UpstreamCutHidden, "when the upstream fails mid-stream, send an error event or abort the client's connection — never end the response normally", "", refHTTP + "#section-9.6"},
	{g.Unknown, ErrorStatus, "pass the upstream's status and error body through: clients retry a 429 or a 529 and show the message", "", refOpenAI},
	{g.Nginx, ErrorStatus, "leave proxy_intercept_errors off (its default) for the API location",
		"location /v1/ {\n    proxy_intercept_errors off;\n}", refNginx + "#proxy_intercept_errors"},
	{g.Unknown, CancelIgnored, "close the upstream connection (or cancel the upstream request) when the client goes away: otherwise the upstream generates, and bills, the whole answer", "", refHTTP + "#section-9.6"},
	{g.Nginx, CancelIgnored, "leave proxy_ignore_client_abort off (its default)",
		"location /v1/ {\n    proxy_ignore_client_abort off;\n}", refNginx + "#proxy_ignore_client_abort"},
	{g.Unknown, LargeBody, "let the gateway take request bodies of a few MB and forward them", "", refHTTP},
	{g.Nginx, LargeBody, "raise client_max_body_size (1m by default)",
		"client_max_body_size 16m;", "https://nginx.org/en/docs/http/ngx_http_core_module.html#client_max_body_size"},
	{g.Caddy, LargeBody, "raise request_body max_size, if set",
		"request_body {\n    max_size 16MB\n}", "https://caddyserver.com/docs/caddyfile/directives/request_body"},
	{g.Apache, LargeBody, "raise LimitRequestBody, if set",
		"LimitRequestBody 16777216", "https://httpd.apache.org/docs/2.4/mod/core.html#limitrequestbody"},
	{g.Unknown, LargeBodySlow, "forward large request bodies without reading, parsing or logging the whole prompt first", "", refHTTP},
	{g.Nginx, LargeBodySlow, "set proxy_request_buffering off: nginx reads the whole body (to disk beyond client_body_buffer_size) before forwarding it",
		"location /v1/ {\n    proxy_request_buffering off;\n}", refNginx + "#proxy_request_buffering"},
	{g.Unknown, KeepaliveClosed, "keep client connections alive after a stream: each new connection costs the client a handshake", "", refHTTP + "#section-9.3"},
	{g.HAProxy, KeepaliveClosed, "use option http-keep-alive (the default) rather than httpclose or http-server-close",
		"defaults\n    option http-keep-alive\n    timeout http-keep-alive 10s", refHAProxy + "#4.2-option%20http-keep-alive"},
	{g.Nginx, KeepaliveClosed, "keep keepalive_timeout above 0 (75s by default)",
		"keepalive_timeout 75s;", "https://nginx.org/en/docs/http/ngx_http_core_module.html#keepalive_timeout"},
	{g.Apache, KeepaliveClosed, "set KeepAlive On",
		"KeepAlive On\nKeepAliveTimeout 5", "https://httpd.apache.org/docs/2.4/mod/core.html#keepalive"},
	{g.Lighttpd, KeepaliveClosed, "keep server.max-keep-alive-requests above 0",
		"server.max-keep-alive-requests = 1000", refLighttp + "Server_max-keep-alive-requestsDetails"},
	{g.Unknown, KeepaliveBroken, "end each response at its framing (the last chunk), send nothing after it, and announce a close (Connection: close) rather than close a kept connection under the next request", "", refHTTP + "#section-9.3"},
	{g.Unknown, StreamBroken, "relay the upstream's bytes as they come: do not parse and rebuild the stream, or parse it per the SSE specification", "", refSSE},
	{g.Unknown, MuxStreams, "forward each stream of a client's HTTP/2 (or HTTP/3) connection upstream on its own, at once, and flush each as it comes: " +
		"allow at least as many concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS; QUIC's MAX_STREAMS over HTTP/3) as clients open, with flow-control windows that keep one stream from holding another", "", refHTTP2 + "#section-5.1.2"},
	{g.Unknown, MuxRefused, "raise the gateway's cap on the requests of one client connection (it answers the request past the cap with a GOAWAY, and the streams it left out are refused) and avoid reloads under load (a reload's GOAWAY does the same): " +
		"every refused stream costs the client a new request, on a new connection", "", refHTTP2 + "#section-6.8"},
	{g.Nginx, MuxRefused, "raise keepalive_requests (1000 by default; before nginx 1.19.7 http2_max_requests): the request that reaches it makes nginx send a GOAWAY, and the streams it left out are sent again on a new connection; a reload's GOAWAY does the same",
		"http {\n    keepalive_requests 10000;\n}", "https://nginx.org/en/docs/http/ngx_http_core_module.html#keepalive_requests"},
	{g.HAProxy, MuxRefused, "raise tune.h2.fe.max-total-streams (unlimited by default): past it haproxy sends a GOAWAY and the client sends the streams it left out again on a new connection; a reload's GOAWAY does the same",
		"global\n    tune.h2.fe.max-total-streams 0", "https://docs.haproxy.org/2.8/configuration.html#3.2-tune.h2.fe.max-total-streams"},
}
