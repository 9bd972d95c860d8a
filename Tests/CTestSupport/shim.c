#define _GNU_SOURCE
#include "CTestSupport.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

int tg_test_drop_file_overrides_on_this_thread(void) {
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    // The raw system calls, not glibc's wrappers of setuid and friends: those change every
    // thread of the process, and only this thread is to lose its overrides.
    if (syscall(SYS_capget, &header, data) != 0) return errno;
    const unsigned overrides[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};
    for (unsigned index = 0; index < sizeof overrides / sizeof overrides[0]; index++) {
        unsigned cap = overrides[index];
        data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
    }
    if (syscall(SYS_capset, &header, data) != 0) return errno;
    return 0;
}
