/*
 * Stand-in model server for the `gpuship probe` tests: a small static HTTP/1.1 server that
 * behaves like a GPU inference server under load, built with `gcc -static` into a FROM scratch
 * image (tests/bed/probe_server.py).
 *
 * Settings (environment; times in ms, memory in MiB):
 *   PORT (8000)               TCP port, on all addresses.
 *   STARTUP_MS (0)            /health and every request answer 503 until then ("loading the
 *                             model"); then the line vLLM logs when its weights are loaded
 *                             ("Model loading took 13.6719 GiB memory and S seconds", S the
 *                             STARTUP_MS in seconds), "model server ready", and answers.
 *   MAX_RUNNING (0)           Most requests served at once; more wait in the server's own
 *                             queue (0: no limit).
 *   METRICS (1)               GET /metrics: Prometheus text with vLLM's gauges
 *                             vllm:num_requests_waiting (the requests in that queue) and
 *                             vllm:num_requests_running; "0": 404, as a server without one.
 *   LATENCY_MS (10)           Service time of a plain request; for a completion, the time to
 *                             its first token.
 *   JITTER_MS (0)             Uniform extra latency in [0, JITTER_MS).
 *   TAIL_PERMILLE (0), TAIL_MS (0)
 *                             That many requests in 1000 take TAIL_MS more (a planted tail
 *                             a mean hides).
 *   TOKEN_MS (5)              Time between streamed tokens.
 *   MEM_TOTAL_MIB (1024)      GPU memory; MEM_BASE_MIB (256) is held from start (weights).
 *   MEM_PER_REQUEST_MIB (32)  Held by each request in flight (KV cache); a request body adds
 *                             MEM_PER_BODY_KIB_MIB per KiB (longer prompts need more).
 *   OVERLOAD (shed)           When a request does not fit: "shed" answers SHED_STATUS (503)
 *                             at once; "crash" prints a CUDA out-of-memory error and exits 1,
 *                             as a PyTorch server does; "queue" waits until memory frees.
 *   SHED_STATUS (503)         429 or 503.
 *   HOST_MEM_PER_REQUEST_MIB (0)
 *                             Host memory each request in flight touches (a container memory
 *                             limit then brings the host's OOM killer).
 *   NVML_LIVE                 File rewritten every 20 ms with this GPU's readings (memory used,
 *                             utilization, power, this process), which the NVML stand-in
 *                             (tests/nvml_stub) serves to the sampler.
 *   STREAM (tokens)           What a streamed completion sends after its 200 and headers:
 *                             "tokens": MAX_TOKENS chunks with text, a usage chunk, [DONE];
 *                             "crlf": the same with CRLF line ends (valid SSE);
 *                             "none": nothing (the body ends at once);
 *                             "keepalive": SSE comments only (": keep-alive"), one per token;
 *                             "empty": role-only and empty deltas, a usage chunk claiming
 *                               tokens, [DONE]: events that never carry a token;
 *                             "garbage": an HTML error page instead of events;
 *                             "badjson": chunks with text, then a data payload that is not
 *                               JSON, then [DONE];
 *                             "error": chunks with text, then {"error": ...}, then [DONE];
 *                             "nodone": chunks with text, then the body ends without
 *                               [DONE] (a complete answer: TGI before its PR #2221);
 *                             "cut": chunks with text, then the connection closes before
 *                               the body's end (the last, empty chunk).
 *   MODE (serve)              "train": no server; print "step N ... step_ms=T" every STEP_MS
 *                             for STEPS steps, growing memory by MEM_PER_STEP_MIB each step,
 *                             crashing with CUDA out of memory past MEM_TOTAL_MIB, and host
 *                             memory by HOST_MEM_PER_STEP_MIB (a leak the OOM killer ends).
 *
 * Routes: GET /health; GET /metrics; POST /v1/completions and /v1/chat/completions (OpenAI-compatible,
 * "stream": true streams SSE chunks then a usage chunk and [DONE]); anything else is a plain
 * request answered "ok".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024ULL * 1024ULL)

typedef struct {
    int port;
    long startup_ms, latency_ms, jitter_ms, tail_permille, tail_ms, token_ms;
    long mem_total, mem_base, mem_per_request, mem_per_body_kib;
    long shed_status, step_ms, steps, mem_per_step, host_per_request, host_per_step;
    long max_running, metrics;
    const char *overload, *nvml_live, *mode, *stream;
} settings;

static settings S;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_freed = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_turn = PTHREAD_COND_INITIALIZER;
static long g_waiting;   /* requests in the server's queue (MAX_RUNNING) */
static long g_running;   /* requests past that queue */
static long g_used;      /* MiB held now */
static long g_in_flight; /* requests being served */
static unsigned long long g_served;
static struct timespec g_started;

static long env_long(const char *name, long fallback) {
    const char *text = getenv(name);
    return text && *text ? strtol(text, NULL, 10) : fallback;
}

static const char *env_text(const char *name, const char *fallback) {
    const char *text = getenv(name);
    return text && *text ? text : fallback;
}

static void say(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vfprintf(stdout, format, args);
    va_end(args);
    fputc('\n', stdout);
    fflush(stdout);
}

static void sleep_ms(long ms) {
    if (ms <= 0) return;
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) == -1 && errno == EINTR) {}
}

static long ms_since_start(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - g_started.tv_sec) * 1000 + (now.tv_nsec - g_started.tv_nsec) / 1000000;
}

/* ------------------------------------------------------------ GPU readings for NVML */

/* The readings of this GPU: memory held, utilization from the requests in flight, power; and
 * this process with its pid and pid namespace (the stand-in NVML library maps them to the
 * host pid, as the real driver reports host pids). A process that died holds nothing. */
static void write_readings(long used, long busy, int alive) {
    if (!S.nvml_live) return;
    char ns[64] = "";
    ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
    ns[n > 0 ? n : 0] = '\0';
    long utilization = busy * 25 > 100 ? 100 : busy * 25;
    char temp[4096], process[256] = "";
    snprintf(temp, sizeof(temp), "%s.tmp", S.nvml_live);
    if (alive)
        snprintf(process, sizeof(process),
                 "{\"pid\": %d, \"pid_namespace\": \"%s\", \"used_memory\": %llu}", (int)getpid(),
                 ns, (unsigned long long)used * MIB);
    FILE *file = fopen(temp, "w");
    if (!file) return;
    fprintf(file,
            "{\"memory_used\": %llu, \"utilization_gpu\": %ld, \"utilization_memory\": %ld, "
            "\"power_usage\": %ld, \"processes\": [%s]}\n",
            (unsigned long long)(alive ? used : 0) * MIB, utilization, utilization / 2,
            60000 + utilization * 3000, process);
    fclose(file);
    rename(temp, S.nvml_live);
}

static void write_live(void) {
    pthread_mutex_lock(&g_lock);
    long used = g_used, busy = g_in_flight;
    pthread_mutex_unlock(&g_lock);
    write_readings(used, busy, 1);
}

static void *live_writer(void *unused) {
    (void)unused;
    int announced = 0;
    for (;;) {
        if (!announced && ms_since_start() >= S.startup_ms) {
            say("Model loading took 13.6719 GiB memory and %.6f seconds", S.startup_ms / 1000.0);
            say("model server ready");
            announced = 1;
        }
        write_live();
        sleep_ms(20);
    }
    return NULL;
}

static void out_of_memory(long want) {
    /* The two lines PyTorch prints when the caching allocator cannot get memory. */
    say("Traceback (most recent call last):");
    say("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %ld.00 MiB. GPU 0 has a "
        "total capacity of %.2f GiB of which %ld.00 MiB is free.",
        want, S.mem_total / 1024.0, S.mem_total - g_used);
    write_readings(0, 0, 0);
    _exit(1);
}

/* Hold `mib` for a request; 0 when it must be shed. Crashes in "crash" mode. */
static int admit(long mib) {
    pthread_mutex_lock(&g_lock);
    while (g_used + mib > S.mem_total) {
        if (strcmp(S.overload, "queue") == 0) {
            pthread_cond_wait(&g_freed, &g_lock);
            continue;
        }
        if (strcmp(S.overload, "crash") == 0) out_of_memory(mib);
        pthread_mutex_unlock(&g_lock);
        return 0;
    }
    g_used += mib;
    g_in_flight++;
    pthread_mutex_unlock(&g_lock);
    return 1;
}

/* Wait in the server's own queue for one of MAX_RUNNING turns. */
static void take_turn(void) {
    if (S.max_running <= 0) return;
    pthread_mutex_lock(&g_lock);
    g_waiting++;
    while (g_running >= S.max_running) pthread_cond_wait(&g_turn, &g_lock);
    g_waiting--;
    g_running++;
    pthread_mutex_unlock(&g_lock);
}

static void end_turn(void) {
    if (S.max_running <= 0) return;
    pthread_mutex_lock(&g_lock);
    g_running--;
    pthread_cond_signal(&g_turn);
    pthread_mutex_unlock(&g_lock);
}

/* Host memory really used (every page written), as a data loader or a CPU-side cache does. */
static char *touch_host_memory(long mib) {
    if (mib <= 0) return NULL;
    char *block = malloc((size_t)mib * MIB);
    if (block) memset(block, 1, (size_t)mib * MIB);
    return block;
}

static void release(long mib) {
    pthread_mutex_lock(&g_lock);
    g_used -= mib;
    g_in_flight--;
    g_served++;
    pthread_cond_broadcast(&g_freed);
    pthread_mutex_unlock(&g_lock);
}

/* ------------------------------------------------------------ HTTP */

typedef struct {
    int fd;
    unsigned seed;
    char buffer[65536];
    size_t have;
} connection;

static int send_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t sent = send(fd, data, length, MSG_NOSIGNAL);
        if (sent <= 0) {
            if (sent < 0 && errno == EINTR) continue;
            return 0;
        }
        data += sent;
        length -= (size_t)sent;
    }
    return 1;
}

static int respond(int fd, int status, const char *reason, const char *type, const char *body) {
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
                     status, reason, type, strlen(body),
                     status == 503 || status == 429 ? "Retry-After: 1\r\n" : "");
    return send_all(fd, head, (size_t)n) && send_all(fd, body, strlen(body));
}

static int chunk(int fd, const char *data) {
    char size[32];
    int n = snprintf(size, sizeof(size), "%zx\r\n", strlen(data));
    return send_all(fd, size, (size_t)n) && send_all(fd, data, strlen(data)) &&
           send_all(fd, "\r\n", 2);
}

/* vLLM's scheduler gauges, in the Prometheus text format its prometheus_client writes. */
static int metrics(connection *c) {
    if (!S.metrics) return respond(c->fd, 404, "Not Found", "text/plain", "not found\n");
    pthread_mutex_lock(&g_lock);
    long waiting = g_waiting, running = g_in_flight;
    pthread_mutex_unlock(&g_lock);
    char body[1024];
    snprintf(body, sizeof(body),
             "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
             "# TYPE vllm:num_requests_running gauge\n"
             "vllm:num_requests_running{engine=\"0\",model_name=\"stand-in\"} %ld.0\n"
             "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
             "# TYPE vllm:num_requests_waiting gauge\n"
             "vllm:num_requests_waiting{engine=\"0\",model_name=\"stand-in\"} %ld.0\n",
             running, waiting);
    return respond(c->fd, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body);
}

static long request_latency(connection *c) {
    long ms = S.latency_ms;
    if (S.jitter_ms > 0) ms += rand_r(&c->seed) % S.jitter_ms;
    if (S.tail_permille > 0 && rand_r(&c->seed) % 1000 < S.tail_permille) ms += S.tail_ms;
    return ms;
}

static long json_long(const char *body, const char *key, long fallback) {
    const char *at = strstr(body, key);
    if (!at) return fallback;
    at = strchr(at + strlen(key), ':');
    return at ? strtol(at + 1, NULL, 10) : fallback;
}

static int completion(connection *c, const char *path, const char *body, size_t body_length) {
    int chat = strstr(path, "/chat/") != NULL;
    int stream = strstr(body, "\"stream\": true") || strstr(body, "\"stream\":true");
    long tokens = json_long(body, "\"max_tokens\"", 16);
    long prompt_tokens = (long)body_length / 4;
    char data[512];
    if (!stream) {
        sleep_ms(request_latency(c) + S.token_ms * (tokens > 0 ? tokens - 1 : 0));
        snprintf(data, sizeof(data),
                 "{\"object\": \"%s\", \"choices\": [{\"index\": 0, %s\"finish_reason\": "
                 "\"length\"}], \"usage\": {\"prompt_tokens\": %ld, \"completion_tokens\": %ld}}",
                 chat ? "chat.completion" : "text_completion",
                 chat ? "\"message\": {\"role\": \"assistant\", \"content\": \"ok\"}, "
                      : "\"text\": \"ok\", ",
                 prompt_tokens, tokens);
        return respond(c->fd, 200, "OK", "application/json", data);
    }
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (!send_all(c->fd, head, strlen(head))) return 0;
    sleep_ms(request_latency(c));
    const char *mode = S.stream;
    const char *end = strcmp(mode, "crlf") == 0 ? "\r\n\r\n" : "\n\n";
    if (strcmp(mode, "garbage") == 0) {
        if (!chunk(c->fd, "<html><head><title>502 Bad Gateway</title></head>\n"
                          "<body><h1>502 Bad Gateway</h1></body></html>\n"))
            return 0;
        tokens = 0;
    }
    for (long i = 0; i < tokens && strcmp(mode, "none") != 0; i++) {
        if (i > 0) sleep_ms(S.token_ms);
        if (strcmp(mode, "keepalive") == 0)
            snprintf(data, sizeof(data), ": keep-alive\n\n");
        else if (strcmp(mode, "empty") == 0)
            snprintf(data, sizeof(data), "data: {\"choices\": [{\"index\": 0, \"delta\": %s}]}\n\n",
                     i == 0 ? "{\"role\": \"assistant\"}" : "{\"content\": \"\"}");
        else if (chat)
            snprintf(data, sizeof(data),
                     "data: {\"object\": \"chat.completion.chunk\", \"choices\": [{\"index\": 0, "
                     "\"delta\": {\"content\": \"tok%ld \"}}]}%s", i, end);
        else
            snprintf(data, sizeof(data),
                     "data: {\"object\": \"text_completion\", \"choices\": [{\"index\": 0, "
                     "\"text\": \"tok%ld \"}]}%s", i, end);
        if (!chunk(c->fd, data)) return 0;
    }
    if (strcmp(mode, "badjson") == 0 && !chunk(c->fd, "data: {\"choices\": [{\"text\": \n\n"))
        return 0;
    if (strcmp(mode, "error") == 0 &&
        !chunk(c->fd, "data: {\"error\": {\"message\": \"engine stopped\", \"code\": 500}}\n\n"))
        return 0;
    if (strcmp(mode, "cut") == 0) return 0; /* closes the connection mid-body */
    if (strcmp(mode, "none") && strcmp(mode, "keepalive") && strcmp(mode, "garbage") &&
        strcmp(mode, "nodone")) {
        snprintf(data, sizeof(data),
                 "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": %ld, "
                 "\"completion_tokens\": %ld}}%sdata: [DONE]%s",
                 prompt_tokens, tokens, end, end);
        if (!chunk(c->fd, data)) return 0;
    }
    return send_all(c->fd, "0\r\n\r\n", 5);
}

/* One parsed request is in c->buffer; answer it. Returns 0 to close the connection. */
static int handle(connection *c, const char *method, const char *path, const char *body,
                  size_t body_length) {
    if (strcmp(path, "/metrics") == 0) return metrics(c);
    if (ms_since_start() < S.startup_ms)
        return respond(c->fd, 503, "Service Unavailable", "text/plain", "loading\n");
    if (strcmp(path, "/health") == 0) return respond(c->fd, 200, "OK", "text/plain", "ok\n");
    take_turn();
    long mib = S.mem_per_request + (long)(body_length / 1024) * S.mem_per_body_kib;
    if (!admit(mib)) {
        end_turn();
        const char *reason = S.shed_status == 429 ? "Too Many Requests" : "Service Unavailable";
        return respond(c->fd, (int)S.shed_status, reason, "text/plain", "overloaded\n");
    }
    char *host = touch_host_memory(S.host_per_request);
    int kept;
    if (strcmp(method, "POST") == 0 && strstr(path, "/v1/") == path && strstr(path, "completions"))
        kept = completion(c, path, body, body_length);
    else {
        sleep_ms(request_latency(c));
        kept = respond(c->fd, 200, "OK", "text/plain", "ok\n");
    }
    free(host);
    release(mib);
    end_turn();
    return kept;
}

static long header_value(const char *headers, const char *name) {
    for (const char *at = headers; (at = strcasestr(at, name)) != NULL; at++)
        if (at == headers || at[-1] == '\n') return strtol(at + strlen(name), NULL, 10);
    return 0;
}

static void *serve_connection(void *argument) {
    connection *c = argument;
    for (;;) {
        char *end = NULL;
        while (!(end = memmem(c->buffer, c->have, "\r\n\r\n", 4))) {
            if (c->have == sizeof(c->buffer)) goto done;
            ssize_t got = recv(c->fd, c->buffer + c->have, sizeof(c->buffer) - c->have, 0);
            if (got <= 0) goto done;
            c->have += (size_t)got;
        }
        *end = '\0';
        size_t header_length = (size_t)(end - c->buffer) + 4;
        long body_length = header_value(c->buffer, "Content-Length:");
        if (body_length < 0 || header_length + (size_t)body_length >= sizeof(c->buffer)) goto done;
        while (c->have < header_length + (size_t)body_length) {
            ssize_t got = recv(c->fd, c->buffer + c->have, sizeof(c->buffer) - c->have, 0);
            if (got <= 0) goto done;
            c->have += (size_t)got;
        }
        char method[16] = "", path[1024] = "";
        if (sscanf(c->buffer, "%15s %1023s", method, path) != 2) goto done;
        int close_after = strcasestr(c->buffer, "Connection: close") != NULL;
        char *body = c->buffer + header_length;
        char saved = body[body_length];
        body[body_length] = '\0';
        int kept = handle(c, method, path, body, (size_t)body_length);
        body[body_length] = saved;
        size_t used = header_length + (size_t)body_length;
        memmove(c->buffer, c->buffer + used, c->have - used);
        c->have -= used;
        if (!kept || close_after) break;
    }
done:
    close(c->fd);
    free(c);
    return NULL;
}

static int serve(void) {
    int listener = socket(AF_INET6, SOCK_STREAM, 0);
    int one = 1, zero = 0;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    struct sockaddr_in6 address = {.sin6_family = AF_INET6, .sin6_port = htons(S.port),
                                   .sin6_addr = in6addr_any};
    if (bind(listener, (struct sockaddr *)&address, sizeof(address)) || listen(listener, 1024)) {
        say("model server: cannot listen on port %d: %s", S.port, strerror(errno));
        return 2;
    }
    say("model server listening on port %d (overload: %s, memory %ld MiB)", S.port, S.overload,
        S.mem_total);
    g_used = S.mem_base;
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024);
    pthread_create(&thread, &attributes, live_writer, NULL);
    unsigned seed = 1;
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        connection *c = calloc(1, sizeof(connection));
        if (!c) { close(fd); continue; }
        c->fd = fd;
        c->seed = seed++;
        if (pthread_create(&thread, &attributes, serve_connection, c)) { close(fd); free(c); }
    }
}

static int train(void) {
    say("training: %ld steps of %ld ms", S.steps, S.step_ms);
    g_used = S.mem_base;
    for (long step = 1; step <= S.steps; step++) {
        if (g_used + S.mem_per_step > S.mem_total) out_of_memory(S.mem_per_step);
        g_used += S.mem_per_step;
        (void)touch_host_memory(S.host_per_step); /* kept: the leak */
        write_live();
        sleep_ms(S.step_ms);
        say("step %ld loss %.4f step_ms=%ld", step, 2.0 / (double)step, S.step_ms);
    }
    say("training done");
    return 0;
}

int main(void) {
    clock_gettime(CLOCK_MONOTONIC, &g_started);
    S = (settings){
        .port = (int)env_long("PORT", 8000),
        .startup_ms = env_long("STARTUP_MS", 0),
        .latency_ms = env_long("LATENCY_MS", 10),
        .jitter_ms = env_long("JITTER_MS", 0),
        .tail_permille = env_long("TAIL_PERMILLE", 0),
        .tail_ms = env_long("TAIL_MS", 0),
        .token_ms = env_long("TOKEN_MS", 5),
        .mem_total = env_long("MEM_TOTAL_MIB", 1024),
        .mem_base = env_long("MEM_BASE_MIB", 256),
        .mem_per_request = env_long("MEM_PER_REQUEST_MIB", 32),
        .mem_per_body_kib = env_long("MEM_PER_BODY_KIB_MIB", 0),
        .shed_status = env_long("SHED_STATUS", 503),
        .step_ms = env_long("STEP_MS", 50),
        .steps = env_long("STEPS", 10),
        .mem_per_step = env_long("MEM_PER_STEP_MIB", 0),
        .host_per_request = env_long("HOST_MEM_PER_REQUEST_MIB", 0),
        .host_per_step = env_long("HOST_MEM_PER_STEP_MIB", 0),
        .max_running = env_long("MAX_RUNNING", 0),
        .metrics = env_long("METRICS", 1),
        .overload = env_text("OVERLOAD", "shed"),
        .nvml_live = getenv("NVML_LIVE"),
        .mode = env_text("MODE", "serve"),
        .stream = env_text("STREAM", "tokens"),
    };
    signal(SIGPIPE, SIG_IGN);
    g_used = S.mem_base;
    write_live();
    return strcmp(S.mode, "train") == 0 ? train() : serve();
}
