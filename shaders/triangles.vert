// SPDX-License-Identifier: MIT
#version 450
// Three flat-coloured triangles made from gl_VertexIndex (no vertex buffers):
// a red one over the centre of the target and two small ones in the lower
// corners. The top corners stay uncovered so the host can read the clear
// colour back there.

layout(location = 0) flat out vec4 color;

const vec2 positions[9] = vec2[9](
    vec2(-0.5, -0.5), vec2(0.5, -0.5), vec2(0.0, 0.5),
    vec2(-1.0, 0.6), vec2(-0.6, 0.6), vec2(-1.0, 1.0),
    vec2(0.6, 0.6), vec2(1.0, 0.6), vec2(1.0, 1.0));

const vec4 colors[3] = vec4[3](
    vec4(1.0, 0.0, 0.0, 1.0),
    vec4(1.0, 1.0, 0.0, 1.0),
    vec4(1.0, 0.0, 1.0, 1.0));

void main()
{
    gl_Position = vec4(positions[gl_VertexIndex], 0.0, 1.0);
    color = colors[gl_VertexIndex / 3];
}
