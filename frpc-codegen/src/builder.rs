//! [`Builder`]: the build.rs configuration. Parses with protox (or takes a descriptor set),
//! generates structs with prost-build, appends frpc's codecs and services to each
//! `<package>.rs`.

use std::path::{Path, PathBuf};

use prost::Message as _;
use prost_types::FileDescriptorSet;

use crate::Error;
use crate::comments::prost_fences_as_text;
use crate::emit::{Attributes, Generator};
use crate::model::OperationNumbering;
use crate::naming::{ExternPaths, package_module};
use crate::parse::{self, Options};

/// Configures and runs code generation. Start with [`configure`](crate::configure).
///
/// Paths (`path` arguments) use prost-build's matcher syntax: `"."` for everything, a package
/// (`".pkg"`), a fully qualified element (`".pkg.Msg"`, `".pkg.Msg.field"`,
/// `".pkg.Service"`), or a suffix of one (`"Msg"`, `"Msg.field"`).
#[derive(Debug, Clone)]
pub struct Builder {
    out_dir: Option<PathBuf>,
    bytes: Vec<String>,
    btree_maps: Vec<String>,
    boxed: Vec<String>,
    skip_debug: Vec<String>,
    disable_comments: Vec<String>,
    type_attributes: Vec<(String, String)>,
    message_attributes: Vec<(String, String)>,
    enum_attributes: Vec<(String, String)>,
    field_attributes: Vec<(String, String)>,
    server_attributes: Vec<(String, String)>,
    client_attributes: Vec<(String, String)>,
    extern_paths: Vec<(String, String)>,
    file_descriptor_set_path: Option<PathBuf>,
    include_file: Option<PathBuf>,
    operation_numbering: OperationNumbering,
    build_client: bool,
    build_server: bool,
    default_stubs: bool,
    emit_rerun_if_changed: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            out_dir: None,
            bytes: Vec::new(),
            btree_maps: Vec::new(),
            boxed: Vec::new(),
            skip_debug: Vec::new(),
            disable_comments: Vec::new(),
            type_attributes: Vec::new(),
            message_attributes: Vec::new(),
            enum_attributes: Vec::new(),
            field_attributes: Vec::new(),
            server_attributes: Vec::new(),
            client_attributes: Vec::new(),
            extern_paths: Vec::new(),
            file_descriptor_set_path: None,
            include_file: None,
            operation_numbering: OperationNumbering::PerFile,
            build_client: true,
            build_server: true,
            default_stubs: false,
            emit_rerun_if_changed: true,
        }
    }
}

/// One generated module: prost's structs and frpc's part.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedFile {
    /// The file name (`capture.rs`, `my.pkg.rs`, `_.rs` for no package).
    pub name: String,
    /// The proto package (`my.pkg`; empty for none).
    pub package: String,
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
        self.bytes.extend(strings(paths));
        self
    }

    /// Map fields held as `BTreeMap` instead of `HashMap` (prost-build's `btree_map`, same
    /// matcher syntax): they are then iterated, and encoded, in key order.
    ///
    /// The crate then needs `prost` among its dependencies (the version frpc uses): prost's
    /// derive names `::prost` in the `Debug` of a `BTreeMap` field, where everything else
    /// generated names only `::frpc`.
    pub fn btree_map<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.btree_maps.extend(strings(paths));
        self
    }

    /// Message fields held in a `Box` (prost-build's `boxed`, same matcher syntax; a member of
    /// a oneof is `".pkg.Msg.oneof.field"`): a large message in a oneof then no longer sizes
    /// every variant of its enum. Recursive fields are boxed without it. Only message fields
    /// can be boxed: a path that matches a scalar, enum or wrapper field fails the build with
    /// an error naming it. The bytes on the wire are the same either way.
    pub fn boxed<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.boxed.extend(strings(paths));
        self
    }

    /// Messages and enums that get no `#[derive(Debug)]` (prost-build's `skip_debug`, same
    /// matcher syntax): the crate implements `Debug` for them itself (prost's `Message` needs
    /// it), to redact a secret, say.
    pub fn skip_debug<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.skip_debug.extend(strings(paths));
        self
    }

    /// Leaves the proto comments out of the doc comments of the matching elements (same
    /// matcher syntax; tonic-build's and prost-build's `disable_comments`): messages, fields
    /// and enums as prost-build does, and services (`".pkg.Service"`) and methods
    /// (`".pkg.Service.Method"`). The generated items keep frpc's own one-line docs.
    pub fn disable_comments<I, S>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.disable_comments.extend(strings(paths));
        self
    }

    /// Attributes on the matching messages, enums and oneof enums (prost-build's
    /// `type_attribute`). `#[cfg(..)]` attributes also go on frpc's `Message`/`EnumIndex` impl
    /// of the type, so a type can be feature-gated.
    pub fn type_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        push(&mut self.type_attributes, path, attribute);
        self
    }

    /// Attributes on the matching messages only (prost-build's `message_attribute`); their
    /// `#[cfg(..)]`s also go on the `Message` impl.
    pub fn message_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        push(&mut self.message_attributes, path, attribute);
        self
    }

    /// Attributes on the matching enums and oneof enums only (prost-build's `enum_attribute`);
    /// their `#[cfg(..)]`s also go on the `EnumIndex` impl.
    pub fn enum_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        push(&mut self.enum_attributes, path, attribute);
        self
    }

    /// Attributes on the matching generated fields (prost-build's `field_attribute`).
    pub fn field_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        push(&mut self.field_attributes, path, attribute);
        self
    }

    /// Attributes on the `FooServer` struct of the matching services (`".pkg.Foo"`, `"Foo"`,
    /// `".pkg"`, `"."`), like tonic-build's `server_attribute`. `#[cfg(..)]` attributes also go
    /// on the service trait and every impl of the server, so the server side can be
    /// feature-gated.
    pub fn server_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        push(&mut self.server_attributes, path, attribute);
        self
    }

    /// Attributes on the `FooClient` struct of the matching services, like tonic-build's
    /// `client_attribute`. `#[cfg(..)]` attributes also go on the client's impl.
    pub fn client_attribute(mut self, path: impl AsRef<str>, attribute: impl AsRef<str>) -> Self {
        push(&mut self.client_attributes, path, attribute);
        self
    }

    /// Uses an existing Rust type or module for a proto type or package instead of generating
    /// it (prost-build's `extern_path`): `proto_path` is fully qualified (`".pkg.Money"` or
    /// `".pkg"`), `rust_path` is a path valid in every generated module (`"::money::Money"`,
    /// `"crate::shared::v1"`).
    ///
    /// frpc's code uses the type like its own, so an extern **message** must implement, besides
    /// what prost needs (`prost::Message`, `Default`, `Clone`, `PartialEq`, `Debug`),
    /// `::frpc::codegen::Message` with the polyglot encoding its proto declares (what
    /// frpc-codegen would generate for it); an extern **enum**, besides what prost needs,
    /// `::frpc::codegen::EnumIndex`. Types that frpc-codegen generated in another crate or
    /// module already do; a missing impl is a rustc error naming the trait.
    ///
    /// A package all of whose types are extern (and which has no services) gets no file and
    /// no module in the include file, as with prost-build: an earlier `compile` into the same
    /// directory may have written its file.
    pub fn extern_path(mut self, proto_path: impl AsRef<str>, rust_path: impl AsRef<str>) -> Self {
        push(&mut self.extern_paths, proto_path, rust_path);
        self
    }

    /// Also writes the compiled `FileDescriptorSet` (protobuf-encoded, source info included)
    /// to `path`, relative to the current directory (in build.rs, the crate root; join it to
    /// `OUT_DIR` to keep it out of the tree).
    pub fn file_descriptor_set_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.file_descriptor_set_path = Some(path.into());
        self
    }

    /// Also writes `name` into the output directory: one file that includes every generated
    /// package in nested modules (`pub mod my { pub mod pkg { include!(..); } }`), like
    /// prost-build's `include_file`. Then `include!(concat!(env!("OUT_DIR"), "/<name>"));`
    /// brings everything at once.
    pub fn include_file(mut self, name: impl Into<PathBuf>) -> Self {
        self.include_file = Some(name.into());
        self
    }

    /// Which methods share one sequence of operation numbers (default
    /// [`OperationNumbering::PerFile`], what Go fRPC does). Use `PerPackage` or `Shared` to
    /// serve the services of several files on one server; Go peers generated per file will not
    /// agree with those numbers.
    pub fn operation_numbering(mut self, numbering: OperationNumbering) -> Self {
        self.operation_numbering = numbering;
        self
    }

    /// Whether to generate `FooClient` types (default `true`).
    pub fn build_client(mut self, yes: bool) -> Self {
        self.build_client = yes;
        self
    }

    /// Whether every service trait method gets a default body answering `UNIMPLEMENTED`
    /// (default `false`; tonic-build's option of the same name): an implementation then
    /// compiles with only the methods it serves, and keeps compiling when the .proto gains one.
    pub fn generate_default_stubs(mut self, yes: bool) -> Self {
        self.default_stubs = yes;
        self
    }

    /// Whether to generate service traits and `FooServer` types (default `true`).
    pub fn build_server(mut self, yes: bool) -> Self {
        self.build_server = yes;
        self
    }

    /// Whether to print `cargo:rerun-if-changed` for every `.proto` file the build read: the
    /// protos and the files they import (default `true`). Not for the include directories:
    /// cargo would watch everything under them (a `target/` directory inside one changes on
    /// every build, which then reran the build script every time).
    pub fn emit_rerun_if_changed(mut self, yes: bool) -> Self {
        self.emit_rerun_if_changed = yes;
        self
    }

    /// Parses `protos` (searched in `includes`) with protox, then does what
    /// [`compile_fds`](Builder::compile_fds) does.
    pub fn compile(&self, protos: &[impl AsRef<Path>], includes: &[impl AsRef<Path>]) -> Result<(), Error> {
        let (fds, read) = parse_protos(protos, includes)?;
        if self.emit_rerun_if_changed {
            for path in read {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        self.compile_fds(fds)
    }

    /// Generates and writes one `<package>.rs` per package of an already compiled descriptor
    /// set (from `protoc --include_imports -o`, `protox`, `buf build`) into the output
    /// directory, without running protox; plus the descriptor set and include files when
    /// configured. The set must hold every imported file too (`--include_imports`), and
    /// comments come through only with source info (`--include_source_info`).
    pub fn compile_fds(&self, fds: FileDescriptorSet) -> Result<(), Error> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| {
                Error::Config("OUT_DIR is not set (call out_dir(..) outside build.rs)".into())
            })?,
        };
        let descriptors = self
            .file_descriptor_set_path
            .as_ref()
            .map(|path| (path, fds.encode_to_vec()));
        let files = self.generate_fds(fds)?;
        std::fs::create_dir_all(&out_dir).map_err(|e| Error::Io(out_dir.clone(), e))?;
        if let Some((path, bytes)) = descriptors {
            write_if_changed(path, &bytes)?;
        }
        for file in &files {
            write_if_changed(&out_dir.join(&file.name), file.contents().as_bytes())?;
        }
        if let Some(name) = &self.include_file {
            let packages: Vec<(&str, &str)> = files
                .iter()
                .map(|f| (f.package.as_str(), f.name.as_str()))
                .collect();
            let text = include_file_contents(&packages, self.out_dir.is_none());
            write_if_changed(&out_dir.join(name), text.as_bytes())?;
        }
        Ok(())
    }

    /// Generates every package's code without writing anything.
    pub fn generate(
        &self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<Vec<GeneratedFile>, Error> {
        self.generate_fds(parse_protos(protos, includes)?.0)
    }

    /// Generates every package's code from a descriptor set, without writing anything.
    pub fn generate_fds(&self, fds: FileDescriptorSet) -> Result<Vec<GeneratedFile>, Error> {
        let extern_paths = ExternPaths::new(&self.extern_paths).map_err(Error::Config)?;
        let mut packages = parse::parse(
            &fds,
            &Options {
                bytes: self.bytes.clone(),
                boxed: self.boxed.clone(),
                disable_comments: self.disable_comments.clone(),
                extern_paths,
                numbering: self.operation_numbering,
            },
        )?;
        // A package with nothing to generate here (every type `extern_path`, or an empty file)
        // gets no file and no module, as prost-build leaves it out: its stub would overwrite
        // the file an earlier `compile` wrote for it into the same directory.
        packages.retain(|p| !(p.messages.is_empty() && p.enums.is_empty() && p.services.is_empty()));
        for package in &mut packages {
            package.file_descriptor_set = package_descriptor_set(&fds, &package.name).encode_to_vec();
        }
        let generator = self.generator()?;
        // Sub-packages are modules of their parent's only where the include file nests them;
        // otherwise the layout is the user's.
        let names: Vec<&str> = match self.include_file {
            Some(_) => packages.iter().map(|p| p.name.as_str()).collect(),
            None => Vec::new(),
        };
        for package in &packages {
            generator.check_names(package, &names)?;
        }

        let mut config = self.prost_config();
        let requests = fds
            .file
            .into_iter()
            .map(|f| (prost_build::Module::from_protobuf_package_name(f.package()), f))
            .collect();
        let mut prost = config.generate(requests).map_err(Error::Prost)?;

        Ok(packages
            .iter()
            .map(|package| {
                let module = prost_build::Module::from_protobuf_package_name(&package.name);
                GeneratedFile {
                    name: package.file_name.clone(),
                    package: package.name.clone(),
                    prost: prost_fences_as_text(prost.remove(&module).unwrap_or_default()),
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

    fn generator(&self) -> Result<Generator, Error> {
        let mut generator = Generator::new()
            .build_client(self.build_client)
            .build_server(self.build_server)
            .generate_default_stubs(self.default_stubs);
        let parse = |option: &str, (path, text): &(String, String)| {
            Attributes::parse(text).map_err(|e| {
                Error::Config(format!(
                    "{option}(\"{path}\", \"{text}\"): not a list of Rust attributes: {e}"
                ))
            })
        };
        for entry in &self.type_attributes {
            let attributes = parse("type_attribute", entry)?;
            generator = generator
                .message_attribute(&entry.0, attributes.clone())
                .enum_attribute(&entry.0, attributes);
        }
        for entry in &self.message_attributes {
            generator = generator.message_attribute(&entry.0, parse("message_attribute", entry)?);
        }
        for entry in &self.enum_attributes {
            generator = generator.enum_attribute(&entry.0, parse("enum_attribute", entry)?);
        }
        for entry in &self.field_attributes {
            parse("field_attribute", entry)?;
        }
        for entry in &self.server_attributes {
            generator = generator.server_attribute(&entry.0, parse("server_attribute", entry)?);
        }
        for entry in &self.client_attributes {
            generator = generator.client_attribute(&entry.0, parse("client_attribute", entry)?);
        }
        Ok(generator)
    }

    fn prost_config(&self) -> prost_build::Config {
        let mut config = prost_build::Config::new();
        config
            .prost_path("::frpc::codegen::prost")
            .prost_types_path("::frpc::codegen::prost_types")
            .bytes(&self.bytes)
            .btree_map(&self.btree_maps)
            .skip_debug(&self.skip_debug)
            .disable_comments(&self.disable_comments);
        for path in &self.boxed {
            config.boxed(path);
        }
        for (path, attribute) in &self.type_attributes {
            config.type_attribute(path, attribute);
        }
        for (path, attribute) in &self.message_attributes {
            config.message_attribute(path, attribute);
        }
        for (path, attribute) in &self.enum_attributes {
            config.enum_attribute(path, attribute);
        }
        for (path, attribute) in &self.field_attributes {
            config.field_attribute(path, attribute);
        }
        for (proto, rust) in &self.extern_paths {
            config.extern_path(proto, rust);
        }
        config
    }
}

fn push(list: &mut Vec<(String, String)>, path: impl AsRef<str>, value: impl AsRef<str>) {
    list.push((path.as_ref().to_string(), value.as_ref().to_string()));
}

/// The matcher paths a list option (`bytes`, `btree_map`) is given, as owned strings.
fn strings<S: AsRef<str>>(paths: impl IntoIterator<Item = S>) -> impl Iterator<Item = String> {
    paths.into_iter().map(|p| p.as_ref().to_string())
}

/// The files of `package` and every file they import, transitively, in `fds`'s order (which
/// lists a file's imports before it), without source info: what a reflection client needs to
/// resolve every type the package's services use.
fn package_descriptor_set(fds: &FileDescriptorSet, package: &str) -> FileDescriptorSet {
    let mut wanted: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut pending: Vec<&str> = fds
        .file
        .iter()
        .filter(|f| f.package() == package)
        .map(|f| f.name())
        .collect();
    while let Some(name) = pending.pop() {
        if wanted.insert(name)
            && let Some(file) = fds.file.iter().find(|f| f.name() == name)
        {
            pending.extend(file.dependency.iter().map(String::as_str));
        }
    }
    let file = fds
        .file
        .iter()
        .filter(|f| wanted.contains(f.name()))
        .map(|f| prost_types::FileDescriptorProto {
            source_code_info: None,
            ..f.clone()
        })
        .collect();
    FileDescriptorSet { file }
}

/// Parses `protos` and what they import with protox: the descriptor set, and the paths of
/// the files it read.
fn parse_protos(
    protos: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> Result<(FileDescriptorSet, Vec<PathBuf>), Error> {
    let parse_error = |e: protox::Error| Error::Parse(format!("{e:?}"));
    let mut compiler = protox::Compiler::new(includes.iter().map(AsRef::as_ref)).map_err(parse_error)?;
    compiler.include_source_info(true).include_imports(true);
    for proto in protos.iter().map(AsRef::as_ref) {
        check_exists(proto, includes)?;
        compiler.open_file(proto).map_err(parse_error)?;
    }
    let read = compiler
        .files()
        .filter_map(|file| file.path().map(Path::to_path_buf))
        .collect();
    Ok((compiler.file_descriptor_set(), read))
}

/// A proto that is nowhere gets an error that says so: protox reports a missing file as one
/// "not in any include path", which sends the user looking at the include directories.
fn check_exists(proto: &Path, includes: &[impl AsRef<Path>]) -> Result<(), Error> {
    if proto.exists()
        || includes
            .iter()
            .any(|include| include.as_ref().join(proto).exists())
    {
        return Ok(());
    }
    let dirs: Vec<String> = includes
        .iter()
        .map(|include| format!("`{}`", include.as_ref().display()))
        .collect();
    Err(Error::Parse(format!(
        "{}: no such file (looked from the current directory, {}, and in the include \
         directories: {})",
        proto.display(),
        std::env::current_dir().map_or_else(|_| "unknown".into(), |dir| dir.display().to_string()),
        dirs.join(", ")
    )))
}

/// Writes `contents` unless the file already holds them (so cargo sees no change), creating
/// missing parent directories.
fn write_if_changed(path: &Path, contents: &[u8]) -> Result<(), Error> {
    if std::fs::read(path).ok().as_deref() == Some(contents) {
        return Ok(());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::Io(parent.to_path_buf(), e))?;
    }
    std::fs::write(path, contents).map_err(|e| Error::Io(path.to_path_buf(), e))
}

/// The include file for `(package, file name)` pairs: modules nested by package, each
/// including its file (by `OUT_DIR` when writing there, else relative to the include file).
fn include_file_contents(packages: &[(&str, &str)], in_out_dir: bool) -> String {
    let mut modules: Vec<(Vec<String>, &str)> = packages
        .iter()
        .map(|(package, file)| (package_module(package), *file))
        .collect();
    modules.sort();
    let mut out = String::from("// @generated by frpc-codegen: every package, nested by name.\n");
    let mut stack: Vec<String> = Vec::new();
    let line = |out: &mut String, depth: usize, text: &str| {
        out.push_str(&"    ".repeat(depth));
        out.push_str(text);
        out.push('\n');
    };
    for (module, file) in modules {
        while !module.starts_with(&stack) {
            stack.pop();
            line(&mut out, stack.len(), "}");
        }
        while stack.len() < module.len() {
            line(
                &mut out,
                stack.len(),
                &format!("pub mod {} {{", module[stack.len()]),
            );
            stack.push(module[stack.len()].clone());
        }
        let include = if in_out_dir {
            format!("include!(concat!(env!(\"OUT_DIR\"), \"/{file}\"));")
        } else {
            format!("include!(\"{file}\");")
        };
        line(&mut out, stack.len(), &include);
    }
    for depth in (0..stack.len()).rev() {
        line(&mut out, depth, "}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{include_file_contents, parse_protos};

    /// A directory of its own under the system's temporary one, holding `files`.
    fn protos_in(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("frpc-codegen-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        dir
    }

    /// The build watches the files it read (a proto and its import), not the include
    /// directory: cargo would rerun the build script whenever anything under it changed (a
    /// `target/` inside it, on every build).
    #[test]
    fn the_files_read_are_the_protos_and_their_imports() {
        let dir = protos_in(
            "read",
            &[
                (
                    "a.proto",
                    "syntax = \"proto3\"; package a; import \"b.proto\"; message A { b.B b = 1; }",
                ),
                ("b.proto", "syntax = \"proto3\"; package b; message B {}"),
                ("c.proto", "syntax = \"proto3\"; package c; message C {}"),
            ],
        );
        let (fds, mut read) = parse_protos(&["a.proto"], &[&dir]).unwrap();
        read.sort();
        assert_eq!(read, vec![dir.join("a.proto"), dir.join("b.proto")]);
        assert_eq!(fds.file.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A proto that does not exist is named as missing, not as "not in any include path".
    #[test]
    fn a_missing_proto_is_said_to_be_missing() {
        let dir = protos_in("missing", &[]);
        let err = parse_protos(&["nope.proto"], &[&dir]).unwrap_err().to_string();
        assert!(err.contains("nope.proto: no such file"), "{err}");
        assert!(err.contains(&dir.display().to_string()), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn include_file_nests_packages() {
        let text = include_file_contents(
            &[
                ("b", "b.rs"),
                ("a.x", "a.x.rs"),
                ("", "_.rs"),
                ("a", "a.rs"),
                ("c.y", "c.y.rs"),
            ],
            false,
        );
        let expected = "\
// @generated by frpc-codegen: every package, nested by name.
include!(\"_.rs\");
pub mod a {
    include!(\"a.rs\");
    pub mod x {
        include!(\"a.x.rs\");
    }
}
pub mod b {
    include!(\"b.rs\");
}
pub mod c {
    pub mod y {
        include!(\"c.y.rs\");
    }
}
";
        assert_eq!(text, expected);
        assert!(include_file_contents(&[("a", "a.rs")], true).contains("env!(\"OUT_DIR\")"));
    }
}
