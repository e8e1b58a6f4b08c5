// SPDX-License-Identifier: MIT
#version 450
// gputrace-workload's compute kernel: every element of the buffer takes
// `rounds` steps of a 32-bit linear congruential generator. Enough arithmetic
// for a dispatch to take measurable GPU time, and the host can recompute the
// result to check the dispatch really ran.

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) buffer Values {
    uint values[];
};

layout(push_constant) uniform Params {
    uint rounds;
    uint count;
};

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= count)
        return;
    uint x = values[i];
    for (uint r = 0u; r < rounds; r++)
        x = x * 1664525u + 1013904223u;
    values[i] = x;
}
