/* Status codes returned by the C core; the Cython layer maps each to one exception in
 * one place (dpfast/_core.pyx, _check). */
#ifndef DPFAST_STATUS_H
#define DPFAST_STATUS_H

enum {
    DPF_OK = 0,
    DPF_E_ENTROPY = 1,   /* the OS supplied no entropy */
    DPF_E_NOMEM = 2,     /* allocation failed */
    DPF_E_RANGE = 3,     /* an input or result is outside the representable range */
    DPF_E_PARAM = 4      /* a parameter the Python layer should have rejected */
};

#endif
