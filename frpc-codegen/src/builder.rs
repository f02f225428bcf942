//! [`Builder`]: the build.rs configuration. Parses with protox, generates structs with
//! prost-build, appends frpc's codecs and services to each `<package>.rs`.

use std::path::{Path, PathBuf};

use crate::Error;
use crate::emit::Generator;
use crate::parse::{self, Options};

/// Configures and runs code generation. Start with [`configure`](crate::configure).
#[derive(Debug, Clone)]
pub struct Builder {
    out_dir: Option<PathBuf>,
    bytes: Vec<String>,
    type_attributes: Vec<(String, String)>,
    field_attributes: Vec<(String, String)>,
    build_client: bool,
    build_server: bool,
    emit_rerun_if_changed: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            out_dir: None,
            bytes: Vec::new(),
            type_attributes: Vec::new(),
            field_attributes: Vec::new(),
            build_client: true,
            build_server: true,
            emit_rerun_if_changed: true,
        }
    }
}

/// One generated module: prost's structs and frpc's part.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedFile {
    /// The file name (`capture.rs`, `my.pkg.rs`, `_.rs` for no package).
    pub name: String,
    /// What prost-build generated (empty when the package has no messages or enums).
    pub prost: String,
    /// What frpc generated: `Message`/`EnumIndex` impls, service traits, servers, clients.
    pub frpc: String,
}

impl GeneratedFile {
    /// The whole file: prost's part then frpc's.
    pub fn contents(&self) -> String {
        format!("{}\n{}", self.prost, self.frpc)
    }
}

impl Builder {
    /// Where to write the files (default: `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Fields held as `bytes::Bytes` instead of `Vec<u8>` (prost-build's matcher syntax:
    /// `"."` for all, `".pkg.Msg.field"`, `"Msg"` …). Decoding them is zero-copy.
    pub fn bytes<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.bytes
            .extend(paths.into_iter().map(|p| p.as_ref().to_string()));
        self
    }

    /// An attribute on the matching generated types (prost-build's `type_attribute`).
    pub fn type_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        self.type_attributes
            .push((path.as_ref().to_string(), attribute.as_ref().to_string()));
        self
    }

    /// An attribute on the matching generated fields (prost-build's `field_attribute`).
    pub fn field_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        self.field_attributes
            .push((path.as_ref().to_string(), attribute.as_ref().to_string()));
        self
    }

    /// Whether to generate `FooClient` types (default `true`).
    pub fn build_client(mut self, yes: bool) -> Self {
        self.build_client = yes;
        self
    }

    /// Whether to generate service traits and `FooServer` types (default `true`).
    pub fn build_server(mut self, yes: bool) -> Self {
        self.build_server = yes;
        self
    }

    /// Whether to print `cargo:rerun-if-changed` for the protos and include directories
    /// (default `true`).
    pub fn emit_rerun_if_changed(mut self, yes: bool) -> Self {
        self.emit_rerun_if_changed = yes;
        self
    }

    /// Generates and writes one `<package>.rs` per package into the output directory.
    pub fn compile(&self, protos: &[impl AsRef<Path>], includes: &[impl AsRef<Path>]) -> Result<(), Error> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| {
                Error::Config("OUT_DIR is not set (call out_dir(..) outside build.rs)".into())
            })?,
        };
        if self.emit_rerun_if_changed {
            for path in protos
                .iter()
                .map(AsRef::as_ref)
                .chain(includes.iter().map(AsRef::as_ref))
            {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        std::fs::create_dir_all(&out_dir).map_err(|e| Error::Io(out_dir.clone(), e))?;
        for file in self.generate(protos, includes)? {
            let path = out_dir.join(&file.name);
            let contents = file.contents();
            if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
                std::fs::write(&path, contents).map_err(|e| Error::Io(path, e))?;
            }
        }
        Ok(())
    }

    /// Generates every package's code without writing anything.
    pub fn generate(
        &self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<Vec<GeneratedFile>, Error> {
        let fds = protox::compile(protos, includes).map_err(|e| Error::Parse(format!("{e:?}")))?;
        let packages = parse::parse(
            &fds,
            &Options {
                bytes: self.bytes.clone(),
            },
        )?;

        let mut config = self.prost_config();
        let requests = fds
            .file
            .iter()
            .map(|f| {
                (
                    prost_build::Module::from_protobuf_package_name(f.package()),
                    f.clone(),
                )
            })
            .collect();
        let mut prost = config.generate(requests).map_err(Error::Prost)?;

        let generator = Generator::new()
            .build_client(self.build_client)
            .build_server(self.build_server);
        Ok(packages
            .iter()
            .map(|package| {
                let module = prost_build::Module::from_protobuf_package_name(&package.name);
                GeneratedFile {
                    name: package.file_name.clone(),
                    prost: prost.remove(&module).unwrap_or_default(),
                    frpc: generator.generate(package),
                }
            })
            .collect())
    }

    /// Only frpc's part of each file, by file name (what the golden test compares).
    pub fn generate_frpc(
        &self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<Vec<(String, String)>, Error> {
        Ok(self
            .generate(protos, includes)?
            .into_iter()
            .map(|f| (f.name, f.frpc))
            .collect())
    }

    fn prost_config(&self) -> prost_build::Config {
        let mut config = prost_build::Config::new();
        config
            .prost_path("::frpc::codegen::prost")
            .prost_types_path("::frpc::codegen::prost_types")
            .bytes(&self.bytes);
        for (path, attribute) in &self.type_attributes {
            config.type_attribute(path, attribute);
        }
        for (path, attribute) in &self.field_attributes {
            config.field_attribute(path, attribute);
        }
        config
    }
}
