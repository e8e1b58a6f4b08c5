# SPDX-License-Identifier: MIT
# installed_layer_guard.sh — sourced by the lavapipe test environments
# (tests/layer/lavapipe_env.sh, tests/common/gt_test_lib.sh) after they
# define fail(): a VK_LAYER_GPUTRACE_timeline manifest installed where the
# loader searches by itself would be loaded instead of the build tree's one
# the tests name through VK_ADD_LAYER_PATH or VK_LAYER_PATH (loader 1.3.239
# keeps the last manifest of a name; newer ones the implicit one), and the
# tests would silently check the installed library. They fail instead.

gt_installed_manifests() {
    _old_ifs=$IFS
    IFS=:
    for _d in ${XDG_CONFIG_DIRS:-/etc/xdg} /etc ${XDG_DATA_DIRS:-/usr/local/share:/usr/share}; do
        for _k in explicit_layer.d implicit_layer.d; do
            [ -f "$_d/vulkan/$_k/VkLayer_gputrace_timeline.json" ] &&
                echo "$_d/vulkan/$_k/VkLayer_gputrace_timeline.json"
        done
    done
    IFS=$_old_ifs
}

_gt_installed=$(gt_installed_manifests)
[ -z "$_gt_installed" ] ||
    fail "the layer is installed where the loader looks by itself ($(echo $_gt_installed)):" \
        "it would be tested instead of this build's. Uninstall it, or run the tests with" \
        "XDG_DATA_DIRS and XDG_CONFIG_DIRS that leave its folder out."
