// SPDX-License-Identifier: MIT
#version 450
// Writes the triangle's colour unchanged.

layout(location = 0) flat in vec4 color;
layout(location = 0) out vec4 out_color;

void main()
{
    out_color = color;
}
