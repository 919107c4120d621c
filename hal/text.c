/* The escaping and bounded reads of text.h. */
#include <stdio.h>
#include <string.h>

#include "text.h"

size_t bp_text_escape(char *dst, size_t size, const char *src, size_t len, bool *cut) {
    size_t n = 0;
    size_t i = 0;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        char esc[5] = {(char)c, '\0'};
        if (c == '\n') memcpy(esc, "\\n", 3);
        else if (c == '\r') memcpy(esc, "\\r", 3);
        else if (c == '\t') memcpy(esc, "\\t", 3);
        else if (c < 0x20 || c == 0x7f) snprintf(esc, sizeof esc, "\\x%02x", c);
        size_t k = strlen(esc);
        if (n + k >= size) break;
        memcpy(dst + n, esc, k);
        n += k;
    }
    dst[n] = '\0';
    if (cut != NULL) *cut = i < len;
    return n;
}

bool bp_text_bounded(const char *text) {
    return text != NULL && strnlen(text, BP_PLUGIN_TEXT_MAX) < BP_PLUGIN_TEXT_MAX;
}

const char *bp_text_from_plugin(const char *text, char *buf, size_t size) {
    size_t len = strnlen(text, BP_PLUGIN_TEXT_MAX);
    bool cut = false;
    size_t n = bp_text_escape(buf, size - 3, text, len, &cut);
    if (cut || len == BP_PLUGIN_TEXT_MAX) memcpy(buf + n, "...", 4);
    return buf;
}
