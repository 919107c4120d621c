/* The strict readings of env.h. */
#include <stdlib.h>
#include <string.h>

#include "env.h"

bool bp_env_parse_whole(const char *text, long long lo, long long hi, long long *out) {
    size_t len = strspn(text, "0123456789");
    if (len == 0 || text[len] != '\0')
        return false;
    long long value = 0;
    for (size_t i = 0; i < len; i++) {
        int digit = text[i] - '0';
        if (digit > hi || value > (hi - digit) / 10)
            return false; /* value * 10 + digit > hi, found before it could overflow */
        value = value * 10 + digit;
    }
    if (value < lo)
        return false;
    *out = value;
    return true;
}

bool bp_env_switch(const char *name, bool unset, bool invalid, const char *source,
                   const char *invalid_means) {
    const char *value = secure_getenv(name);
    if (value == NULL || value[0] == '\0')
        return unset;
    if (strcmp(value, "0") == 0 || strcmp(value, "1") == 0)
        return value[0] == '1';
    bp_log(BP_LOG_WARN, source, "%s='%s' is not 0 or 1; %s", name, value, invalid_means);
    return invalid;
}
