/* Text the library does not control (strings from plugins, the environment) made safe
 * to print: read only up to a bound, NUL-terminated, control bytes escaped, so that a
 * message cannot run past its buffer, forge log lines or drive the terminal. */
#ifndef BP_HAL_TEXT_H
#define BP_HAL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "hal_internal.h"

/* How far the host reads a string a plugin hands it (a format, a reason, a name)
 * looking for its NUL; a longer or unterminated string is cut or refused there. */
#define BP_PLUGIN_TEXT_MAX 4096

/* Copies the `len` bytes of `src` into `dst` (`size` >= 1 bytes, always NUL-terminated)
 * with control bytes escaped (\n, \r, \t, else \xHH); an escape is never split. Returns
 * the bytes written; *cut (may be NULL) says whether `src` did not fit. */
BP_INTERNAL size_t bp_text_escape(char *dst, size_t size, const char *src, size_t len,
                                  bool *cut);

/* `text` from a plugin, read up to BP_PLUGIN_TEXT_MAX bytes and escaped into `buf`
 * (`size` >= 4), "..." marking a cut; returns buf. */
BP_INTERNAL const char *bp_text_from_plugin(const char *text, char *buf, size_t size);

/* True when `text` ends within BP_PLUGIN_TEXT_MAX bytes (NULL is not a string). */
BP_INTERNAL bool bp_text_bounded(const char *text);

#endif
