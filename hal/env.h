/* Environment variables that take a number or a switch, read strictly: a value counts
 * only when it is exactly one of those accepted; anything else is warned about (the
 * value escaped, like every log line) and the caller's safe default applies. */
#ifndef BP_HAL_ENV_H
#define BP_HAL_ENV_H

#include <stdbool.h>

#include "hal_internal.h"

/* True when `text` is a whole decimal number in [lo, hi] (lo >= 0) written with digits
 * only: no sign, space, exponent or base prefix, and no overflow, however long. */
BP_INTERNAL bool bp_env_parse_whole(const char *text, long long lo, long long hi,
                                    long long *out);

/* The switch `name` (read with secure_getenv: some switches choose code): "1" is on and "0" off; unset or empty gives
 * `unset`; any other value gives `invalid`, with a warning from `source` that ends
 * with `invalid_means` (what the program does instead). */
BP_INTERNAL bool bp_env_switch(const char *name, bool unset, bool invalid, const char *source,
                               const char *invalid_means);

#endif
