/* xpu: the Intel GPU family of a PCI device id, to pick an ahead-of-time binary
 * (clc_native_find). The names are ocloc's -device names. A device the table does not
 * know, or whose binary does not load, runs the SPIR-V modules, which every device
 * takes: the table only saves the driver's compile at first use. */
#include "xpu_internal.h"

typedef struct family_range {
    uint16_t first, last; /* PCI device ids, inclusive */
    const char *family;
} family_range;

static const family_range families[] = {
    {0x0BD0, 0x0BDB, "pvc"}, /* Data Center GPU Max (Ponte Vecchio) */
    {0x0B69, 0x0B69, "pvc"},
    {0x0B6E, 0x0B6E, "pvc"},
    {0x4F80, 0x4F88, "dg2"}, /* Arc A-series (Alchemist) and Data Center GPU Flex */
    {0x5690, 0x5698, "dg2"},
    {0x56A0, 0x56A6, "dg2"},
    {0x56B0, 0x56B3, "dg2"},
    {0x56BA, 0x56C2, "dg2"},
};

const char *xpu_family_of(uint32_t pci_id) {
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (pci_id >= families[i].first && pci_id <= families[i].last)
            return families[i].family;
    return NULL;
}
