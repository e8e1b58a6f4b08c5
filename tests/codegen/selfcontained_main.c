/* SPDX-License-Identifier: MIT */
/* The self-contained header test passes by compiling: every other source of
 * this executable includes one generated header on its own. */
int main(void)
{
    return 0;
}
