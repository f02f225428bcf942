//! The one place errors become tokens.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;

/// Collects several errors into one, so a single expansion reports all of them.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Records an error.
    pub(crate) fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    /// Records the error of `result`, if any, and returns its value.
    pub(crate) fn ok<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|err| self.push(err)).ok()
    }

    /// `Err` with every recorded error, or `Ok(value)`.
    pub(crate) fn finish<T>(self, value: T) -> syn::Result<T> {
        match self.0 {
            Some(err) => Err(err),
            None => Ok(value),
        }
    }
}

/// The expansion, or `compile_error!`s followed by `fallback` (the item as written, so that
/// code using it does not pile up unrelated errors).
pub(crate) fn expand(result: syn::Result<TokenStream2>, fallback: TokenStream2) -> TokenStream {
    match result {
        Ok(tokens) => tokens.into(),
        Err(err) => {
            let errors = err.to_compile_error();
            quote::quote!(#errors #fallback).into()
        }
    }
}
