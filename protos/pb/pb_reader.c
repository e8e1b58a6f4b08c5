/* SPDX-License-Identifier: MIT */
/* Out-of-line reader helpers: error names and whole-span validation. */
#include "protos/pb/pb_reader.h"

const char *pb_error_str(pb_error err)
{
    switch (err) {
    case PB_OK:
        return "ok";
    case PB_ERR_TRUNCATED:
        return "truncated field";
    case PB_ERR_VARINT_TOO_LONG:
        return "varint longer than 64 bits";
    case PB_ERR_BAD_WIRE_TYPE:
        return "unsupported wire type";
    case PB_ERR_BAD_FIELD_ID:
        return "invalid field number";
    case PB_ERR_TOO_DEEP:
        return "message nesting too deep";
    case PB_ERR_WRONG_WIRE_TYPE:
        return "field has an unexpected wire type";
    }
    return "unknown error";
}

pb_error pb_validate(const void *data, size_t len)
{
    pb_reader r;
    pb_field f;
    pb_reader_init(&r, data, len);
    while (pb_reader_next(&r, &f)) {
    }
    return r.err;
}
