/*
 * Stand-in libnvidia-ml.so.1 for the gpuship tests.
 *
 * It exports the NVML entry points that pynvml (nvidia-ml-py) calls for driver, CUDA and GPU
 * readings, so the real pynvml runs unchanged against any host a test describes. nvmlInit reads
 * the host description from the JSON file named by $GPUSHIP_FAKE_NVML (format: see
 * tests/bed/nvml.py). Rules:
 *   - $GPUSHIP_FAKE_NVML unset            -> nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED;
 *   - file unreadable or not valid JSON    -> a line on stderr, nvmlInit returns NVML_ERROR_UNKNOWN;
 *   - "init_error": N                      -> nvmlInit returns N;
 *   - "device_nodes": [PATH, ...]          -> nvmlInit opens each, as the real library opens
 *                                             /dev/nvidiactl and /dev/nvidiaN; one that cannot
 *                                             be opened (absent, or a device rule denies it)
 *                                             makes nvmlInit return NVML_ERROR_UNKNOWN, the
 *                                             "Unknown Error" of a container that lost its GPUs;
 *   - "fail": {"<nvml function>": N}       -> that function returns N (top level: every call;
 *                                             inside a GPU: calls on that GPU's handle);
 *   - a reading that is absent or null     -> its function returns NVML_ERROR_NOT_SUPPORTED;
 *   - "live": PATH on a GPU                -> memory used, utilization, power, clock event
 *                                             reasons and processes are read from that JSON
 *                                             file at every call (a process under test writes
 *                                             it), before the GPU's own values.
 * Struct layouts and buffer rules follow nvml.h as mirrored by pynvml.
 */
#define _DEFAULT_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

/* ---------------------------------------------------------------- minimal JSON reader */

typedef enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } json_kind;

typedef struct json {
    json_kind kind;
    double number;
    char *string;
    size_t count;
    char **keys;          /* objects only */
    struct json **items;  /* array elements or object values */
} json;

typedef struct {
    const char *text;
    const char *at;
    const char *error;
} json_parser;

static json *json_value(json_parser *p);

static void json_skip_space(json_parser *p) {
    while (*p->at && isspace((unsigned char)*p->at)) p->at++;
}

static json *json_new(json_kind kind) {
    json *value = calloc(1, sizeof(json));
    if (value) value->kind = kind;
    return value;
}

static void json_free(json *value) {
    if (!value) return;
    for (size_t i = 0; i < value->count; i++) {
        if (value->keys) free(value->keys[i]);
        json_free(value->items[i]);
    }
    free(value->keys);
    free(value->items);
    free(value->string);
    free(value);
}

static int json_append(json *container, char *key, json *item) {
    char **keys = container->keys;
    if (container->kind == J_OBJECT) {
        keys = realloc(container->keys, (container->count + 1) * sizeof(char *));
        if (!keys) return 0;
        container->keys = keys;
        keys[container->count] = key;
    }
    json **items = realloc(container->items, (container->count + 1) * sizeof(json *));
    if (!items) return 0;
    container->items = items;
    items[container->count++] = item;
    return 1;
}

static char *json_string_body(json_parser *p) {
    /* p->at is on the opening quote; \uXXXX is kept only for ASCII (enough for descriptions). */
    size_t cap = 16, len = 0;
    char *out = malloc(cap);
    p->at++;
    while (out && *p->at && *p->at != '"') {
        char c = *p->at++;
        if (c == '\\') {
            char e = *p->at++;
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned code = 0;
                if (sscanf(p->at, "%4x", &code) != 1 || code > 0x7f) {
                    p->error = "only ASCII \\u escapes are supported";
                    free(out);
                    return NULL;
                }
                p->at += 4;
                c = (char)code;
                break;
            }
            case '"': case '\\': case '/': c = e; break;
            default: p->error = "bad escape in string"; free(out); return NULL;
            }
        }
        if (len + 2 > cap) {
            char *grown = realloc(out, cap *= 2);
            if (!grown) { free(out); return NULL; }
            out = grown;
        }
        out[len++] = c;
    }
    if (!out) { p->error = "out of memory"; return NULL; }
    if (*p->at != '"') { p->error = "unterminated string"; free(out); return NULL; }
    p->at++;
    out[len] = '\0';
    return out;
}

static json *json_container(json_parser *p, json_kind kind, char close) {
    json *container = json_new(kind);
    p->at++;
    json_skip_space(p);
    if (*p->at == close) { p->at++; return container; }
    while (container && !p->error) {
        char *key = NULL;
        json_skip_space(p);
        if (kind == J_OBJECT) {
            if (*p->at != '"') { p->error = "expected a quoted key"; break; }
            key = json_string_body(p);
            if (!key) break;
            json_skip_space(p);
            if (*p->at != ':') { p->error = "expected ':'"; free(key); break; }
            p->at++;
        }
        json *item = json_value(p);
        if (!item || !json_append(container, key, item)) { free(key); json_free(item); break; }
        json_skip_space(p);
        if (*p->at == ',') { p->at++; continue; }
        if (*p->at == close) { p->at++; return container; }
        p->error = kind == J_OBJECT ? "expected ',' or '}'" : "expected ',' or ']'";
    }
    if (!p->error) p->error = "out of memory";
    json_free(container);
    return NULL;
}

static json *json_value(json_parser *p) {
    json_skip_space(p);
    char c = *p->at;
    if (c == '{') return json_container(p, J_OBJECT, '}');
    if (c == '[') return json_container(p, J_ARRAY, ']');
    if (c == '"') {
        char *text = json_string_body(p);
        json *value = text ? json_new(J_STRING) : NULL;
        if (value) value->string = text; else free(text);
        return value;
    }
    if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        errno = 0;
        double number = strtod(p->at, &end);
        if (end == p->at || errno) { p->error = "bad number"; return NULL; }
        p->at = end;
        json *value = json_new(J_NUMBER);
        if (value) value->number = number;
        return value;
    }
    static const struct { const char *word; json_kind kind; double number; } words[] = {
        {"true", J_BOOL, 1}, {"false", J_BOOL, 0}, {"null", J_NULL, 0}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i].word);
        if (strncmp(p->at, words[i].word, n) == 0) {
            p->at += n;
            json *value = json_new(words[i].kind);
            if (value) value->number = words[i].number;
            return value;
        }
    }
    p->error = "unexpected character";
    return NULL;
}

static json *json_get(const json *object, const char *key) {
    if (!object || object->kind != J_OBJECT) return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0) return object->items[i];
    return NULL;
}

static int json_number(const json *object, const char *key, double *out) {
    const json *value = json_get(object, key);
    if (!value || (value->kind != J_NUMBER && value->kind != J_BOOL)) return 0;
    *out = value->number;
    return 1;
}

static const char *json_text(const json *object, const char *key) {
    const json *value = json_get(object, key);
    return value && value->kind == J_STRING ? value->string : NULL;
}

/* ---------------------------------------------------------------- host model */

typedef struct device {
    const json *desc;      /* the GPU (or MIG device) object of the description */
    struct device *parent; /* MIG devices: the GPU they belong to */
    unsigned index;
    struct device *migs;
    unsigned mig_count;
} device;

typedef device *nvmlDevice_t;

static json *g_host;
static device *g_gpus;
static unsigned g_gpu_count;
static unsigned g_init_count;

static void release_host(void) {
    for (unsigned i = 0; i < g_gpu_count; i++) free(g_gpus[i].migs);
    free(g_gpus);
    json_free(g_host);
    g_gpus = NULL;
    g_gpu_count = 0;
    g_host = NULL;
}

static json *read_description(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "nvml stand-in: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0, got;
    char *text = malloc(cap + 1);
    while (text && (got = fread(text + len, 1, cap - len, file)) > 0) {
        len += got;
        if (len == cap) {
            char *grown = realloc(text, (cap *= 2) + 1);
            if (!grown) { free(text); text = NULL; }
            else text = grown;
        }
    }
    fclose(file);
    if (!text) return NULL;
    text[len] = '\0';
    json_parser parser = {text, text, NULL};
    json *root = json_value(&parser);
    json_skip_space(&parser);
    if (root && !parser.error && *parser.at) parser.error = "trailing characters";
    if (!root || parser.error || root->kind != J_OBJECT) {
        fprintf(stderr, "nvml stand-in: %s: %s at byte %ld\n", path,
                parser.error ? parser.error : "top level must be an object",
                (long)(parser.at - parser.text));
        json_free(root);
        root = NULL;
    }
    free(text);
    return root;
}

static int build_devices(void) {
    const json *gpus = json_get(g_host, "gpus");
    if (!gpus || gpus->kind != J_ARRAY) return 1;
    g_gpus = calloc(gpus->count ? gpus->count : 1, sizeof(device));
    if (!g_gpus) return 0;
    g_gpu_count = (unsigned)gpus->count;
    for (unsigned i = 0; i < g_gpu_count; i++) {
        device *gpu = &g_gpus[i];
        gpu->desc = gpus->items[i];
        gpu->index = i;
        const json *migs = json_get(gpu->desc, "mig_devices");
        if (!migs || migs->kind != J_ARRAY || migs->count == 0) continue;
        gpu->migs = calloc(migs->count, sizeof(device));
        if (!gpu->migs) return 0;
        gpu->mig_count = (unsigned)migs->count;
        for (unsigned m = 0; m < gpu->mig_count; m++)
            gpu->migs[m] = (device){migs->items[m], gpu, m, NULL, 0};
    }
    return 1;
}

/* A forced error for `function`: the device's own "fail" map first, then the host's. */
static nvmlReturn_t forced(const char *function, const device *dev) {
    double code;
    for (; dev; dev = dev->parent)
        if (json_number(json_get(dev->desc, "fail"), function, &code)) return (nvmlReturn_t)code;
    if (json_number(json_get(g_host, "fail"), function, &code)) return (nvmlReturn_t)code;
    return NVML_SUCCESS;
}

static int known_device(const device *dev) {
    for (unsigned i = 0; dev && i < g_gpu_count; i++) {
        if (dev == &g_gpus[i]) return 1;
        if (g_gpus[i].mig_count && dev >= g_gpus[i].migs && dev < g_gpus[i].migs + g_gpus[i].mig_count)
            return 1;
    }
    return 0;
}

/* Common prologue: initialised, valid handle, no forced error. */
#define CHECK_DEVICE(dev)                                              \
    do {                                                               \
        if (!g_init_count) return NVML_ERROR_UNINITIALIZED;            \
        if (!known_device(dev)) return NVML_ERROR_INVALID_ARGUMENT;    \
        nvmlReturn_t forced_error = forced(__func__, dev);             \
        if (forced_error != NVML_SUCCESS) return forced_error;         \
    } while (0)

#define CHECK_SYSTEM()                                                 \
    do {                                                               \
        if (!g_init_count) return NVML_ERROR_UNINITIALIZED;            \
        nvmlReturn_t forced_error = forced(__func__, NULL);            \
        if (forced_error != NVML_SUCCESS) return forced_error;         \
    } while (0)

static nvmlReturn_t copy_text(const char *text, char *buffer, unsigned length) {
    if (!text) return NVML_ERROR_NOT_SUPPORTED;
    if (!buffer) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buffer, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

static nvmlReturn_t read_uint(const device *dev, const char *key, unsigned *out) {
    double value;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (!json_number(dev->desc, key, &value)) return NVML_ERROR_NOT_SUPPORTED;
    *out = (unsigned)value;
    return NVML_SUCCESS;
}

/* MIG devices share their parent's chip readings (brand, compute capability, architecture). */
static const device *chip(const device *dev) { return dev->parent ? dev->parent : dev; }

/* ---------------------------------------------------------------- init / system */

static int open_device_nodes(void) {
    const json *nodes = json_get(g_host, "device_nodes");
    if (!nodes || nodes->kind != J_ARRAY) return 1;
    for (size_t i = 0; i < nodes->count; i++) {
        if (nodes->items[i]->kind != J_STRING) continue;
        int fd = open(nodes->items[i]->string, O_RDONLY);
        if (fd < 0) return 0;
        close(fd);
    }
    return 1;
}

API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    if (g_init_count) { g_init_count++; return NVML_SUCCESS; }
    const char *path = getenv("GPUSHIP_FAKE_NVML");
    if (!path || !*path) return NVML_ERROR_DRIVER_NOT_LOADED;
    g_host = read_description(path);
    if (!g_host) return NVML_ERROR_UNKNOWN;
    double init_error;
    if (json_number(g_host, "init_error", &init_error) && init_error != 0) {
        release_host();
        return (nvmlReturn_t)init_error;
    }
    if (!open_device_nodes()) { release_host(); return NVML_ERROR_UNKNOWN; }
    if (!build_devices()) { release_host(); return NVML_ERROR_UNKNOWN; }
    g_init_count = 1;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
API nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

API nvmlReturn_t nvmlShutdown(void) {
    if (!g_init_count) return NVML_ERROR_UNINITIALIZED;
    if (--g_init_count == 0) release_host();
    return NVML_SUCCESS;
}

API const char *nvmlErrorString(nvmlReturn_t result) {
    /* The strings of the real library (as pynvml's table quotes them). */
    switch (result) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 5: return "Already Initialized";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 8: return "Insufficient External Power";
    case 9: return "Driver Not Loaded";
    case 10: return "Timeout";
    case 11: return "Interrupt Request Issue";
    case 12: return "NVML Shared Library Not Found";
    case 13: return "Function Not Found";
    case 14: return "Corrupted infoROM";
    case 15: return "GPU is lost";
    case 16: return "GPU requires restart";
    case 17: return "The operating system has blocked the request.";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    case 20: return "Insufficient Memory";
    case 25: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    CHECK_SYSTEM();
    return copy_text(json_text(g_host, "driver_version"), version, length);
}

API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    CHECK_SYSTEM();
    return copy_text(json_text(g_host, "nvml_version"), version, length);
}

static nvmlReturn_t cuda_version(const char *key, int *version) {
    double value;
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    if (!json_number(g_host, key, &value) && !json_number(g_host, "cuda_driver_version", &value))
        return NVML_ERROR_NOT_SUPPORTED;
    *version = (int)value;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    CHECK_SYSTEM();
    return cuda_version("cuda_driver_version", version);
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    CHECK_SYSTEM();
    return cuda_version("cuda_driver_version_v2", version);
}

/* ---------------------------------------------------------------- devices */

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    CHECK_SYSTEM();
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = g_gpu_count;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *handle) {
    CHECK_SYSTEM();
    if (!handle || index >= g_gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t forced_error = forced(__func__, &g_gpus[index]);
    if (forced_error != NVML_SUCCESS) return forced_error;
    *handle = &g_gpus[index];
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *handle) {
    return nvmlDeviceGetHandleByIndex_v2(index, handle);
}

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *handle) {
    CHECK_SYSTEM();
    if (!uuid || !handle) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < g_gpu_count; i++) {
        const char *own = json_text(g_gpus[i].desc, "uuid");
        if (own && strcmp(own, uuid) == 0) { *handle = &g_gpus[i]; return NVML_SUCCESS; }
        for (unsigned m = 0; m < g_gpus[i].mig_count; m++) {
            own = json_text(g_gpus[i].migs[m].desc, "uuid");
            if (own && strcmp(own, uuid) == 0) { *handle = &g_gpus[i].migs[m]; return NVML_SUCCESS; }
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length) {
    CHECK_DEVICE(dev);
    return copy_text(json_text(dev->desc, "name"), name, length);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length) {
    CHECK_DEVICE(dev);
    return copy_text(json_text(dev->desc, "uuid"), uuid, length);
}

API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t dev, unsigned int *brand) {
    CHECK_DEVICE(dev);
    return read_uint(chip(dev), "brand", brand);
}

API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned int *arch) {
    CHECK_DEVICE(dev);
    return read_uint(chip(dev), "architecture", arch);
}

API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index) {
    CHECK_DEVICE(dev);
    if (dev->parent) return NVML_ERROR_INVALID_ARGUMENT;
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = dev->index;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor) {
    CHECK_DEVICE(dev);
    if (dev->parent) return NVML_ERROR_INVALID_ARGUMENT;
    if (!minor) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = dev->index;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor) {
    CHECK_DEVICE(dev);
    const json *cc = json_get(chip(dev)->desc, "compute_capability");
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    if (!cc || cc->kind != J_ARRAY || cc->count != 2) return NVML_ERROR_NOT_SUPPORTED;
    *major = (int)cc->items[0]->number;
    *minor = (int)cc->items[1]->number;
    return NVML_SUCCESS;
}

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

#define NVML_MEMORY_V2_VERSION ((unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

/* The live readings of a GPU ("live": PATH), read anew at each call; NULL when it has none or
 * the file is absent (a process that has not started yet). The caller frees it. */
static json *live_readings(const device *dev) {
    const char *path = json_text(chip(dev)->desc, "live");
    if (!path || access(path, R_OK) != 0) return NULL;
    json *live = read_description(path);
    return live;
}

/* A reading from the live file first, then from the GPU's description. */
static int reading(const device *dev, const json *live, const char *key, double *out) {
    return json_number(live, key, out) || json_number(dev->desc, key, out);
}

static nvmlReturn_t memory(const device *dev, unsigned long long *total,
                           unsigned long long *reserved, unsigned long long *used) {
    double value;
    if (!json_number(dev->desc, "memory_total", &value)) return NVML_ERROR_NOT_SUPPORTED;
    *total = (unsigned long long)value;
    *reserved = json_number(dev->desc, "memory_reserved", &value) ? (unsigned long long)value : 0;
    json *live = live_readings(dev);
    *used = reading(dev, live, "memory_used", &value) ? (unsigned long long)value : 0;
    json_free(live);
    return *reserved + *used > *total ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *info) {
    CHECK_DEVICE(dev);
    unsigned long long total, reserved, used;
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t status = memory(dev, &total, &reserved, &used);
    if (status != NVML_SUCCESS) return status;
    /* v1 has no "reserved": the driver counts it as used. */
    info->total = total;
    info->used = used + reserved;
    info->free = total - used - reserved;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *info) {
    CHECK_DEVICE(dev);
    unsigned long long total, reserved, used;
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != NVML_MEMORY_V2_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlReturn_t status = memory(dev, &total, &reserved, &used);
    if (status != NVML_SUCCESS) return status;
    info->total = total;
    info->reserved = reserved;
    info->used = used;
    info->free = total - used - reserved;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, unsigned int *mode) {
    CHECK_DEVICE(dev);
    if (dev->parent) return NVML_ERROR_INVALID_ARGUMENT;
    return read_uint(dev, "persistence_mode", mode);
}

API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, unsigned int error_type,
                                             unsigned int counter_type,
                                             unsigned long long *count) {
    static const char *keys[2][2] = {{"volatile_corrected", "aggregate_corrected"},
                                     {"volatile_uncorrected", "aggregate_uncorrected"}};
    CHECK_DEVICE(dev);
    double value;
    if (!count || error_type > 1 || counter_type > 1) return NVML_ERROR_INVALID_ARGUMENT;
    const json *ecc = json_get(chip(dev)->desc, "ecc_errors");
    if (!ecc || ecc->kind != J_OBJECT) return NVML_ERROR_NOT_SUPPORTED;
    *count = json_number(ecc, keys[error_type][counter_type], &value) ? (unsigned long long)value : 0;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
    CHECK_DEVICE(dev);
    if (dev->parent || !current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    const json *mode = json_get(dev->desc, "mig_mode");
    if (!mode || mode->kind != J_ARRAY || mode->count != 2) return NVML_ERROR_NOT_SUPPORTED;
    *current = (unsigned)mode->items[0]->number;
    *pending = (unsigned)mode->items[1]->number;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *count) {
    CHECK_DEVICE(dev);
    if (dev->parent) return NVML_ERROR_INVALID_ARGUMENT;
    return read_uint(dev, "max_mig_devices", count);
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int index,
                                                     nvmlDevice_t *mig) {
    CHECK_DEVICE(dev);
    unsigned max_count;
    if (dev->parent || !mig) return NVML_ERROR_INVALID_ARGUMENT;
    if (read_uint(dev, "max_mig_devices", &max_count) != NVML_SUCCESS) return NVML_ERROR_NOT_SUPPORTED;
    if (index >= max_count) return NVML_ERROR_INVALID_ARGUMENT;
    /* Slots up to the maximum exist; those without a MIG device are "not found". */
    if (index >= dev->mig_count) return NVML_ERROR_NOT_FOUND;
    *mig = &dev->migs[index];
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t dev, unsigned int *is_mig) {
    CHECK_DEVICE(dev);
    if (!is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    *is_mig = dev->parent != NULL;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *dev) {
    CHECK_DEVICE(mig);
    if (!mig->parent || !dev) return NVML_ERROR_INVALID_ARGUMENT;
    *dev = mig->parent;
    return NVML_SUCCESS;
}

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    CHECK_DEVICE(dev);
    const char *bus_id = json_text(chip(dev)->desc, "pci_bus_id");
    double number;
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    if (!bus_id) return NVML_ERROR_NOT_SUPPORTED;
    memset(pci, 0, sizeof(*pci));
    if (sscanf(bus_id, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device) != 3)
        return NVML_ERROR_UNKNOWN;
    snprintf(pci->busId, sizeof(pci->busId), "%s", bus_id);
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", pci->domain & 0xffff,
             pci->bus, pci->device);
    if (json_number(chip(dev)->desc, "pci_device_id", &number)) pci->pciDeviceId = (unsigned)number;
    if (json_number(chip(dev)->desc, "pci_subsystem_id", &number))
        pci->pciSubSystemId = (unsigned)number;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    return nvmlDeviceGetPciInfo_v3(dev, pci);
}

/* ---------------------------------------------------------------- readings that change */

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *rates) {
    CHECK_DEVICE(dev);
    double gpu, mem;
    if (!rates) return NVML_ERROR_INVALID_ARGUMENT;
    json *live = live_readings(dev);
    int found = reading(dev, live, "utilization_gpu", &gpu);
    if (!reading(dev, live, "utilization_memory", &mem)) mem = 0;
    json_free(live);
    if (!found) return NVML_ERROR_NOT_SUPPORTED;
    rates->gpu = (unsigned)gpu;
    rates->memory = (unsigned)mem;
    return NVML_SUCCESS;
}

static nvmlReturn_t live_uint(const device *dev, const char *key, unsigned *out) {
    double value;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    json *live = live_readings(dev);
    int found = reading(dev, live, key, &value);
    json_free(live);
    if (!found) return NVML_ERROR_NOT_SUPPORTED;
    *out = (unsigned)value;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *milliwatts) {
    CHECK_DEVICE(dev);
    return live_uint(dev, "power_usage", milliwatts);
}

API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev,
                                                        unsigned long long *reasons) {
    CHECK_DEVICE(dev);
    unsigned value;
    if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t status = live_uint(dev, "clocks_event_reasons", &value);
    if (status == NVML_SUCCESS) *reasons = value;
    return status;
}

API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev,
                                                           unsigned long long *reasons) {
    return nvmlDeviceGetCurrentClocksEventReasons(dev, reasons);
}

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

/* The host pid of `pid` as seen in pid namespace `ns` ("pid:[N]"): the process whose
 * /proc/P/ns/pid is `ns` and whose NSpid ends in `pid`. The real driver reports host pids; a
 * containerised writer knows only its own. 0 when no such process is visible. */
static unsigned host_pid(unsigned pid, const char *ns) {
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    unsigned found = 0;
    while (proc && !found && (entry = readdir(proc)) != NULL) {
        if (!isdigit((unsigned char)entry->d_name[0])) continue;
        char path[300], link[64] = "", line[256];
        snprintf(path, sizeof(path), "/proc/%s/ns/pid", entry->d_name);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0) continue;
        link[n] = '\0';
        if (strcmp(link, ns) != 0) continue;
        snprintf(path, sizeof(path), "/proc/%s/status", entry->d_name);
        FILE *status = fopen(path, "r");
        while (status && fgets(line, sizeof(line), status)) {
            if (strncmp(line, "NSpid:", 6) != 0) continue;
            char *last = strrchr(line, '\t');
            if (last && (unsigned)strtoul(last + 1, NULL, 10) == pid)
                found = (unsigned)strtoul(entry->d_name, NULL, 10);
            break;
        }
        if (status) fclose(status);
    }
    if (proc) closedir(proc);
    return found;
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                                         nvmlProcessInfo_t *infos) {
    CHECK_DEVICE(dev);
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    json *live = live_readings(dev);
    const json *list = json_get(live ? live : dev->desc, "processes");
    nvmlProcessInfo_t found[64];
    unsigned total = 0;
    for (size_t i = 0; list && list->kind == J_ARRAY && i < list->count && total < 64; i++) {
        const json *item = list->items[i];
        double pid, used;
        if (!json_number(item, "pid", &pid) || !json_number(item, "used_memory", &used)) continue;
        const char *ns = json_text(item, "pid_namespace");
        unsigned mapped = ns ? host_pid((unsigned)pid, ns) : (unsigned)pid;
        if (!mapped) continue;
        found[total++] = (nvmlProcessInfo_t){mapped, (unsigned long long)used, 0xFFFFFFFFu,
                                             0xFFFFFFFFu};
    }
    json_free(live);
    unsigned capacity = *count;
    *count = total;
    if (total == 0) return NVML_SUCCESS;
    if (!infos || capacity < total) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(infos, found, total * sizeof(nvmlProcessInfo_t));
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count,
                                                      nvmlProcessInfo_t *infos) {
    return nvmlDeviceGetComputeRunningProcesses_v3(dev, count, infos);
}
