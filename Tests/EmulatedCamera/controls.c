/*
 * The camera's controls and the control ioctls (V4L2 API: "User Controls", "Extended Controls
 * API", "Camera Control Reference", ioctl VIDIOC_QUERYCTRL / VIDIOC_QUERY_EXT_CTRL /
 * VIDIOC_QUERYMENU, VIDIOC_G_CTRL / VIDIOC_S_CTRL and VIDIOC_G_EXT_CTRLS / VIDIOC_S_EXT_CTRLS /
 * VIDIOC_TRY_EXT_CTRLS).
 *
 * Names are the kernel's standard control names (drivers/media/v4l2-core/v4l2-ctrls-defs.c), so
 * v4l2-ctl derives the same keys as for a real UVC camera: brightness, contrast, saturation,
 * white_balance_automatic, power_line_frequency, auto_exposure, exposure_time_absolute.
 */
#include "emucam.h"

#include <errno.h>
#include <string.h>

struct control_info {
    uint32_t id;
    uint32_t type;
    const char *name;
    int32_t minimum;
    int32_t maximum;
    int32_t step;
    int32_t default_value;
    uint32_t flags;
    /* Menu items that do not exist (V4L2 API, VIDIOC_QUERYMENU: "the driver returns EINVAL for
     * ... indices that are not supported"), as a bit per index. */
    uint64_t menu_skip_mask;
    const char *const *menu;
    /* Index into struct emu_control_values, or -1 for a control class heading. */
    int value_index;
};

static const char *const power_line_menu[] = {"Disabled", "50 Hz", "60 Hz"};
/* UVC cameras offer only Manual and Aperture Priority (uvc_ctrl.c maps the UVC auto-exposure
 * mode bits this way), so QUERYMENU for items 0 and 2 fails as it does on such cameras. */
static const char *const exposure_auto_menu[] = {"Auto Mode", "Manual Mode",
                                                 "Shutter Priority Mode", "Aperture Priority Mode"};

/* Sorted by id: VIDIOC_QUERYCTRL with V4L2_CTRL_FLAG_NEXT_CTRL walks them in this order. */
static const struct control_info controls[] = {
    {V4L2_CID_USER_CLASS, V4L2_CTRL_TYPE_CTRL_CLASS, "User Controls", 0, 0, 0, 0,
     V4L2_CTRL_FLAG_READ_ONLY | V4L2_CTRL_FLAG_WRITE_ONLY, 0, NULL, -1},
    {V4L2_CID_BRIGHTNESS, V4L2_CTRL_TYPE_INTEGER, "Brightness", -64, 64, 1, 0,
     V4L2_CTRL_FLAG_SLIDER, 0, NULL, EMU_CTRL_BRIGHTNESS},
    {V4L2_CID_CONTRAST, V4L2_CTRL_TYPE_INTEGER, "Contrast", 0, 95, 1, 32, V4L2_CTRL_FLAG_SLIDER,
     0, NULL, EMU_CTRL_CONTRAST},
    {V4L2_CID_SATURATION, V4L2_CTRL_TYPE_INTEGER, "Saturation", 0, 128, 1, 64,
     V4L2_CTRL_FLAG_SLIDER, 0, NULL, EMU_CTRL_SATURATION},
    {V4L2_CID_AUTO_WHITE_BALANCE, V4L2_CTRL_TYPE_BOOLEAN, "White Balance, Automatic", 0, 1, 1,
     1, 0, 0, NULL, EMU_CTRL_WHITE_BALANCE_AUTOMATIC},
    {V4L2_CID_POWER_LINE_FREQUENCY, V4L2_CTRL_TYPE_MENU, "Power Line Frequency", 0, 2, 1, 1, 0,
     0, power_line_menu, EMU_CTRL_POWER_LINE_FREQUENCY},
    {V4L2_CID_CAMERA_CLASS, V4L2_CTRL_TYPE_CTRL_CLASS, "Camera Controls", 0, 0, 0, 0,
     V4L2_CTRL_FLAG_READ_ONLY | V4L2_CTRL_FLAG_WRITE_ONLY, 0, NULL, -1},
    {V4L2_CID_EXPOSURE_AUTO, V4L2_CTRL_TYPE_MENU, "Auto Exposure", 0, 3, 1,
     V4L2_EXPOSURE_APERTURE_PRIORITY, 0,
     (1u << V4L2_EXPOSURE_AUTO) | (1u << V4L2_EXPOSURE_SHUTTER_PRIORITY), exposure_auto_menu,
     EMU_CTRL_EXPOSURE_AUTO},
    {V4L2_CID_EXPOSURE_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Exposure Time, Absolute", 1, 5000, 1,
     156, 0, 0, NULL, EMU_CTRL_EXPOSURE_ABSOLUTE},
};

enum { CONTROL_TABLE_COUNT = sizeof controls / sizeof controls[0] };

static const struct control_info *control_by_id(uint32_t id) {
    for (size_t i = 0; i < CONTROL_TABLE_COUNT; i++) {
        if (controls[i].id == id) {
            return &controls[i];
        }
    }
    return NULL;
}

int emu_controls_index(uint32_t id) {
    const struct control_info *info = control_by_id(id);
    return info == NULL ? -1 : info->value_index;
}

uint32_t emu_controls_id(int index) {
    for (size_t i = 0; i < CONTROL_TABLE_COUNT; i++) {
        if (controls[i].value_index == index) {
            return controls[i].id;
        }
    }
    return 0;
}

void emu_controls_reset(struct emu_control_values *values) {
    for (size_t i = 0; i < CONTROL_TABLE_COUNT; i++) {
        if (controls[i].value_index >= 0) {
            values->value[controls[i].value_index] = controls[i].default_value;
        }
    }
}

/* The V4L2_CTRL_FLAG_NEXT_CTRL walk: the first control after `id` (flags stripped). Only
 * plain controls exist, so asking for compound controls alone finds nothing. */
static const struct control_info *control_for_query(uint32_t id) {
    bool next_plain = (id & V4L2_CTRL_FLAG_NEXT_CTRL) != 0;
    bool next_compound = (id & V4L2_CTRL_FLAG_NEXT_COMPOUND) != 0;
    uint32_t base = id & ~(V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);
    if (!next_plain && !next_compound) {
        return control_by_id(base);
    }
    if (!next_plain) {
        return NULL;
    }
    for (size_t i = 0; i < CONTROL_TABLE_COUNT; i++) {
        if (controls[i].id > base) {
            return &controls[i];
        }
    }
    return NULL;
}

/* Exposure time is set by the camera unless Auto Exposure is Manual; V4L2 API "Control
 * Flags": V4L2_CTRL_FLAG_INACTIVE marks a control whose value is currently not used. */
static uint32_t dynamic_flags(const struct control_info *info,
                              const struct emu_control_values *values) {
    uint32_t flags = info->flags;
    if (info->id == V4L2_CID_EXPOSURE_ABSOLUTE &&
        values->value[EMU_CTRL_EXPOSURE_AUTO] != V4L2_EXPOSURE_MANUAL) {
        flags |= V4L2_CTRL_FLAG_INACTIVE;
    }
    return flags;
}

/* V4L2 API, VIDIOC_S_CTRL: ERANGE when "the struct v4l2_control value is out of bounds";
 * a skipped menu item is EINVAL like the kernel's control framework (validate_new()). */
static int validate(const struct control_info *info, int32_t value) {
    if (info->value_index < 0) {
        return EACCES;
    }
    if (value < info->minimum || value > info->maximum) {
        return ERANGE;
    }
    if (info->type == V4L2_CTRL_TYPE_MENU && (info->menu_skip_mask >> value) & 1) {
        return EINVAL;
    }
    return 0;
}

static void set_value(struct emu_control_values *values, const struct control_info *info,
                      int32_t value, bool *changed) {
    if (values->value[info->value_index] != value) {
        values->value[info->value_index] = value;
        *changed = true;
    }
}

void emu_controls_restore(struct emu_control_values *values, int index, int32_t value) {
    uint32_t id = emu_controls_id(index);
    const struct control_info *info = control_by_id(id);
    if (info != NULL && validate(info, value) == 0) {
        values->value[index] = value;
    }
}

static int query_ctrl(const struct emu_control_values *values, struct v4l2_queryctrl *query) {
    const struct control_info *info = control_for_query(query->id);
    if (info == NULL) {
        return EINVAL;
    }
    memset(query, 0, sizeof *query);
    query->id = info->id;
    query->type = info->type;
    strncpy((char *)query->name, info->name, sizeof query->name - 1);
    query->minimum = info->minimum;
    query->maximum = info->maximum;
    query->step = info->step;
    query->default_value = info->default_value;
    query->flags = dynamic_flags(info, values);
    return 0;
}

static int query_ext_ctrl(const struct emu_control_values *values,
                          struct v4l2_query_ext_ctrl *query) {
    const struct control_info *info = control_for_query(query->id);
    if (info == NULL) {
        return EINVAL;
    }
    memset(query, 0, sizeof *query);
    query->id = info->id;
    query->type = info->type;
    strncpy(query->name, info->name, sizeof query->name - 1);
    query->minimum = info->minimum;
    query->maximum = info->maximum;
    query->step = (uint64_t)info->step;
    query->default_value = info->default_value;
    query->flags = dynamic_flags(info, values);
    /* V4L2 API, VIDIOC_QUERY_EXT_CTRL: a control class has no value (elem_size 0); every
     * other control here is a single 32-bit value. */
    query->elem_size = info->value_index < 0 ? 0 : sizeof(int32_t);
    query->elems = 1;
    return 0;
}

static int query_menu(struct v4l2_querymenu *menu) {
    const struct control_info *info = control_by_id(menu->id);
    if (info == NULL || info->type != V4L2_CTRL_TYPE_MENU) {
        return EINVAL;
    }
    uint32_t index = menu->index;
    if (index < (uint32_t)info->minimum || index > (uint32_t)info->maximum ||
        ((info->menu_skip_mask >> index) & 1)) {
        return EINVAL;
    }
    uint32_t id = menu->id;
    memset(menu, 0, sizeof *menu);
    menu->id = id;
    menu->index = index;
    strncpy((char *)menu->name, info->menu[index], sizeof menu->name - 1);
    return 0;
}

/* V4L2 API, VIDIOC_G_EXT_CTRLS: which is the current value, the default value, or a control
 * class that every listed control must belong to. Requests (media request API) do not exist. */
static int check_which(uint32_t which, uint32_t id) {
    if (which == V4L2_CTRL_WHICH_CUR_VAL || which == V4L2_CTRL_WHICH_DEF_VAL) {
        return 0;
    }
    return V4L2_CTRL_ID2WHICH(id) == which ? 0 : EINVAL;
}

static bool class_exists(uint32_t which) {
    if (which == V4L2_CTRL_WHICH_CUR_VAL || which == V4L2_CTRL_WHICH_DEF_VAL) {
        return true;
    }
    return control_by_id(which | 1) != NULL;
}

/* G/S/TRY_EXT_CTRLS. All checks happen before any value changes, so on an error nothing was
 * set; V4L2 API, VIDIOC_G_EXT_CTRLS, error_idx: a failed validation step reports count for
 * G and S, and the failing control's index for TRY. */
static int ext_ctrls(struct emu_control_values *values, uint32_t request,
                     struct v4l2_ext_controls *list, bool *changed) {
    bool is_get = request == (uint32_t)VIDIOC_G_EXT_CTRLS;
    bool is_set = request == (uint32_t)VIDIOC_S_EXT_CTRLS;
    if (list->which == V4L2_CTRL_WHICH_REQUEST_VAL ||
        (!is_get && list->which == V4L2_CTRL_WHICH_DEF_VAL)) {
        list->error_idx = list->count;
        return EINVAL;
    }
    if (list->count == 0) {
        /* "It is allowed to have count == 0 to check whether the ioctl is supported." */
        return class_exists(list->which) ? 0 : EINVAL;
    }
    if (list->controls == NULL) {
        list->error_idx = list->count;
        return EFAULT;
    }
    for (uint32_t i = 0; i < list->count; i++) {
        struct v4l2_ext_control *control = &list->controls[i];
        const struct control_info *info = control_by_id(control->id);
        int error = info == NULL ? EINVAL : check_which(list->which, control->id);
        if (error == 0 && info->value_index < 0) {
            error = EACCES;
        }
        if (error == 0 && !is_get) {
            error = validate(info, control->value);
        }
        if (error != 0) {
            list->error_idx = (is_get || is_set) ? list->count : i;
            return error;
        }
    }
    for (uint32_t i = 0; i < list->count; i++) {
        struct v4l2_ext_control *control = &list->controls[i];
        const struct control_info *info = control_by_id(control->id);
        if (is_get) {
            control->value = list->which == V4L2_CTRL_WHICH_DEF_VAL
                                 ? info->default_value
                                 : values->value[info->value_index];
        } else if (is_set) {
            set_value(values, info, control->value, changed);
        }
    }
    return 0;
}

bool emu_controls_is_request(uint32_t request) {
    return request == (uint32_t)VIDIOC_QUERYCTRL || request == (uint32_t)VIDIOC_QUERY_EXT_CTRL ||
           request == (uint32_t)VIDIOC_QUERYMENU || request == (uint32_t)VIDIOC_G_CTRL ||
           request == (uint32_t)VIDIOC_S_CTRL || request == (uint32_t)VIDIOC_G_EXT_CTRLS ||
           request == (uint32_t)VIDIOC_S_EXT_CTRLS || request == (uint32_t)VIDIOC_TRY_EXT_CTRLS;
}

int emu_controls_ioctl(struct emu_control_values *values, uint32_t request, void *arg,
                       bool *changed) {
    *changed = false;
    if (request == (uint32_t)VIDIOC_QUERYCTRL) {
        return query_ctrl(values, arg);
    }
    if (request == (uint32_t)VIDIOC_QUERY_EXT_CTRL) {
        return query_ext_ctrl(values, arg);
    }
    if (request == (uint32_t)VIDIOC_QUERYMENU) {
        return query_menu(arg);
    }
    if (request == (uint32_t)VIDIOC_G_CTRL || request == (uint32_t)VIDIOC_S_CTRL) {
        struct v4l2_control *control = arg;
        const struct control_info *info = control_by_id(control->id);
        if (info == NULL) {
            return EINVAL;
        }
        if (request == (uint32_t)VIDIOC_G_CTRL) {
            if (info->value_index < 0) {
                return EACCES;
            }
            control->value = values->value[info->value_index];
            return 0;
        }
        int error = validate(info, control->value);
        if (error == 0) {
            set_value(values, info, control->value, changed);
        }
        return error;
    }
    return ext_ctrls(values, request, arg, changed);
}
