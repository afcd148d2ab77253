/*
 * Stand-in nvidia-smi for the gpuship tests: `nvidia-smi -L` over whatever libnvidia-ml.so.1
 * the loader finds (in the tests, the NVML stand-in beside it). It prints what the real tool
 * prints for the two cases a check of a running container meets:
 *   GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)          exit 0
 *   Failed to initialize NVML: Unknown Error              exit 255 (the real tool's status)
 * The NVIDIA Container Toolkit mounts the real nvidia-smi into containers given the `utility`
 * capability; GPU-less test machines have none, hence this.
 */
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);

int main(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[1], "-L") != 0) {
        fprintf(stderr, "this stand-in answers only nvidia-smi -L\n");
        return 2;
    }
    nvmlReturn_t rc = nvmlInit_v2();
    if (rc != 0) {
        printf("Failed to initialize NVML: %s\n", nvmlErrorString(rc));
        return 255;
    }
    unsigned int count = 0;
    rc = nvmlDeviceGetCount_v2(&count);
    if (rc != 0) {
        printf("Unable to determine the number of GPUs: %s\n", nvmlErrorString(rc));
        return 255;
    }
    if (count == 0) {
        printf("No devices found.\n");
        return 6;
    }
    for (unsigned int i = 0; i < count; i++) {
        nvmlDevice_t device;
        char name[96] = "", uuid[96] = "";
        if (nvmlDeviceGetHandleByIndex_v2(i, &device) != 0) return 255;
        nvmlDeviceGetName(device, name, sizeof name);
        nvmlDeviceGetUUID(device, uuid, sizeof uuid);
        printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
    }
    nvmlShutdown();
    return 0;
}
