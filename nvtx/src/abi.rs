//! The NVTX v3 injection ABI, written from the documented types of the public NVTX v3 headers
//! (`nvtx3/nvToolsExt.h`, `nvtx3/nvtxDetail/nvtxTypes.h`; Apache-2.0). Only what this library
//! uses: the export table that hands out the function tables, the callback ids of the CORE and
//! CORE2 modules, and the event attributes structure.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `wchar_t` on Linux: a 32-bit code point.
pub type WChar = i32;
/// `nvtxRangeId_t`: 0 is the null id.
pub type RangeId = u64;
/// `nvtxDomainHandle_t`: null is the default domain.
pub type DomainHandle = *const c_void;
/// `nvtxStringHandle_t`.
pub type StringHandle = *const c_void;

/// `NvtxFunctionPointer`: a generic function pointer, cast to the slot's real type.
pub type FnPtr = *const c_void;

/// `NvtxGetExportTableFunc_t`.
pub type GetExportTable = unsafe extern "C" fn(export_table_id: u32) -> *const c_void;

/// `NVTX_ETID_CALLBACKS`.
pub const ETID_CALLBACKS: u32 = 1;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
pub struct ExportTableCallbacks {
    /// `sizeof(NvtxExportTableCallbacks)`.
    pub struct_size: usize,
    /// Returns the module's table: an array of pointers to the loader's function-pointer slots,
    /// indexed by callback id, and its size (the number of valid ids plus one).
    pub get_module_function_table: Option<
        unsafe extern "C" fn(
            module: c_int,
            out_table: *mut *mut *mut FnPtr,
            out_size: *mut c_uint,
        ) -> c_int,
    >,
}

/// `NVTX_CB_MODULE_CORE`.
pub const MODULE_CORE: c_int = 1;
/// `NVTX_CB_MODULE_CORE2` (domains).
pub const MODULE_CORE2: c_int = 5;

/// `NvtxCallbackIdCore`.
pub mod core_id {
    pub const MARK_EX: usize = 1;
    pub const MARK_A: usize = 2;
    pub const MARK_W: usize = 3;
    pub const RANGE_START_EX: usize = 4;
    pub const RANGE_START_A: usize = 5;
    pub const RANGE_START_W: usize = 6;
    pub const RANGE_END: usize = 7;
    pub const RANGE_PUSH_EX: usize = 8;
    pub const RANGE_PUSH_A: usize = 9;
    pub const RANGE_PUSH_W: usize = 10;
    pub const RANGE_POP: usize = 11;
    pub const NAME_CATEGORY_A: usize = 12;
    pub const NAME_CATEGORY_W: usize = 13;
    pub const NAME_OS_THREAD_A: usize = 14;
    pub const NAME_OS_THREAD_W: usize = 15;
}

/// `NvtxCallbackIdCore2`.
pub mod core2_id {
    pub const DOMAIN_MARK_EX: usize = 1;
    pub const DOMAIN_RANGE_START_EX: usize = 2;
    pub const DOMAIN_RANGE_END: usize = 3;
    pub const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub const DOMAIN_RANGE_POP: usize = 5;
    pub const DOMAIN_RESOURCE_CREATE: usize = 6;
    pub const DOMAIN_RESOURCE_DESTROY: usize = 7;
    pub const DOMAIN_NAME_CATEGORY_A: usize = 8;
    pub const DOMAIN_NAME_CATEGORY_W: usize = 9;
    pub const DOMAIN_REGISTER_STRING_A: usize = 10;
    pub const DOMAIN_REGISTER_STRING_W: usize = 11;
    pub const DOMAIN_CREATE_A: usize = 12;
    pub const DOMAIN_CREATE_W: usize = 13;
    pub const DOMAIN_DESTROY: usize = 14;
    pub const INITIALIZE: usize = 15;
}

/// `nvtxMessageType_t` values.
pub const MESSAGE_TYPE_ASCII: i32 = 1;
/// A `wchar_t` string.
pub const MESSAGE_TYPE_UNICODE: i32 = 2;
/// A handle from `nvtxDomainRegisterString{A,W}`.
pub const MESSAGE_TYPE_REGISTERED: i32 = 3;

/// `nvtxEventAttributes_v2` (`nvtxEventAttributes_t`), 48 bytes on 64-bit targets.
#[repr(C)]
pub struct EventAttributes {
    /// `NVTX_VERSION` of the caller's headers.
    pub version: u16,
    /// `sizeof(nvtxEventAttributes_t)` as the caller knows it.
    pub size: u16,
    /// User category.
    pub category: u32,
    /// `nvtxColorType_t`.
    pub color_type: i32,
    /// ARGB colour.
    pub color: u32,
    /// `nvtxPayloadType_t`.
    pub payload_type: i32,
    /// Reserved.
    pub reserved0: i32,
    /// The payload union (8 bytes).
    pub payload: u64,
    /// `nvtxMessageType_t`.
    pub message_type: i32,
    /// The message union: `const char*`, `const wchar_t*` or `nvtxStringHandle_t`.
    pub message: *const c_void,
}

/// Bytes of `EventAttributes` up to and including `message`: a smaller `size` has no message.
pub const EVENT_ATTRIBUTES_SIZE: usize = std::mem::size_of::<EventAttributes>();

/// `const char*` as the NVTX API passes it.
pub type CStr = *const c_char;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_attributes_layout_matches_the_headers() {
        // version/size 0/2, category 4, colorType 8, color 12, payloadType 16, reserved0 20,
        // payload 24, messageType 32, message 40; 48 bytes.
        assert_eq!(EVENT_ATTRIBUTES_SIZE, 48);
        assert_eq!(std::mem::offset_of!(EventAttributes, payload), 24);
        assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
        assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
        assert_eq!(std::mem::size_of::<ExportTableCallbacks>(), 16);
    }
}
