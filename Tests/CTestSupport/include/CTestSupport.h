#ifndef C_TEST_SUPPORT_H
#define C_TEST_SUPPORT_H

/// Clears CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER from the calling thread's
/// effective capabilities, so file modes bind it even when it runs as root. Linux keeps
/// capabilities per thread: the process's other threads keep theirs. 0 on success, else errno.
int tg_test_drop_file_overrides_on_this_thread(void);

#endif
