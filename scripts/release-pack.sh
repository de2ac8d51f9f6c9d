# The packages of scripts/release.sh: the .deb and the installer image.
# Sourced by it (uses its version, commit, epoch, out, work, repo, names,
# built, image_name, arch_info and repro_tar); not run on its own.

deb_package=cni-rs-plugins

# The .deb of architecture $1 from its flat tree $2: the plugins in
# /usr/lib/cni, where Debian's containernetworking-plugins puts them, which
# it conflicts with, replaces and provides (so runtimes depending on it are
# satisfied, and apt swaps one for the other). packaging/deb/ is the hook
# for what a plugin needs besides its binary (the dhcp daemon's systemd
# units): its root/ tree is copied into the package and its maintainer
# scripts (preinst, postinst, prerm, postrm) and conffiles into DEBIAN/.
pack_deb() {
    local a=$1 flat=$2 musl gnu prefix debarch rest root n f hook=$repo/packaging/deb debver size
    read -r musl gnu prefix debarch rest < <(arch_info "$a")
    root=$work/$a/deb
    mkdir -p "$root/DEBIAN" "$root/usr/lib/cni" "$root/usr/share/doc/$deb_package"
    install -m 0755 "$flat/cni-plugins" "$root/usr/lib/cni/cni-plugins"
    for n in "${names[@]}"; do ln "$root/usr/lib/cni/cni-plugins" "$root/usr/lib/cni/$n"; done
    install -m 0644 "$repo/LICENSE" "$root/usr/share/doc/$deb_package/copyright"
    gzip -9 -n <"$repo/README.md" >"$root/usr/share/doc/$deb_package/README.md.gz"
    # The dhcp daemon's units, where Debian's package has them, with
    # ExecStart in /usr/lib/cni; not enabled (as Debian's: its postinst
    # enables them only where they were enabled before).
    if [[ " ${names[*]} " == *" dhcp "* ]]; then
        mkdir -p "$root/lib/systemd/system"
        for f in cni-dhcp.socket cni-dhcp.service; do
            sed 's#^ExecStart=.*#ExecStart=/usr/lib/cni/dhcp daemon#' "$repo/packaging/systemd/$f" \
                >"$root/lib/systemd/system/$f"
            chmod 0644 "$root/lib/systemd/system/$f"
        done
    fi
    if [ -d "$hook/root" ]; then cp -a "$hook/root/." "$root/"; fi
    for f in preinst postinst prerm postrm; do
        if [ -f "$hook/$f" ]; then install -m 0755 "$hook/$f" "$root/DEBIAN/$f"; fi
    done
    if [ -f "$hook/conffiles" ]; then install -m 0644 "$hook/conffiles" "$root/DEBIAN/conffiles"; fi
    # Debian orders 0.3.0~rc.1 before 0.3.0, as semver orders 0.3.0-rc.1.
    debver=${version/-/\~}
    size=$(du -s -k "$root" | cut -f1)
    cat >"$root/DEBIAN/control" <<EOF
Package: $deb_package
Version: $debver
Architecture: $debarch
Maintainer: cni-rs developers <cni-rs@localhost>
Installed-Size: $size
Section: net
Priority: optional
Provides: containernetworking-plugins (= 1.9.1), container-network-stack (= 1)
Conflicts: containernetworking-plugins
Replaces: containernetworking-plugins
Recommends: iptables
Description: CNI reference plugins, in Rust (cni-rs $version)
$(echo "A drop-in replacement for the Container Network Interface reference plugins (${names[*]}): the same protocol behaviour, result JSON, error codes, on-disk state and firewall names, so a node can switch with live containers. One static multi-call binary, /usr/lib/cni/cni-plugins, hard-linked under each plugin's name." | fold -s -w 72 | sed 's/ *$//; s/^/ /')
 .
 Built from commit ${commit:-unknown}.
EOF
    find "$root" -exec touch -h -d "@$epoch" {} +
    chmod -R go-w "$root"
    dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${deb_package}_${debver}_$debarch.deb" >/dev/null
}

# Move file $1 into the OCI layout as a blob; prints "sha256:<hex> <size>".
oci_blob() {
    local f=$1 d s
    d=$(sha256sum "$f" | cut -d' ' -f1)
    s=$(stat -c %s "$f")
    mv -f "$f" "$layout/blobs/sha256/$d"
    echo "sha256:$d $s"
}

# The installer image of every built architecture, FROM scratch: the flat
# tree in /opt/cni/bin (the multi-call binary, which is the installer, and
# its plugin links), /LICENSE. Entrypoint `cni-plugins install`, by default
# into a host directory mounted at /host/opt/cni/bin. Written as an OCI
# layout by hand (no daemon, no network): one layer, config and manifest
# per architecture, an index of them named by its annotations, in one
# archive, cni-plugins-image-v<VERSION>.oci.tar, which `ctr images import`
# and `podman load` (the manifest of the machine's platform) both take.
pack_image() {
    layout=$work/oci
    rm -rf "$layout"
    mkdir -p "$layout/blobs/sha256"
    local a musl gnu prefix debarch qemu oarch variant root created platform
    local layer diff config manifest index descs=()
    local -A manifest_of=()
    local ref=$image_name:v$version
    [[ "$ref" =~ ^[a-z0-9./_:-]+$ ]] || die "image name $ref is not a plain reference"
    created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
    for a in "${built[@]}"; do
        read -r musl gnu prefix debarch qemu oarch variant < <(arch_info "$a")
        root=$work/$a/image
        mkdir -p "$root/opt/cni/bin"
        cp -a "$work/$a/flat/." "$root/opt/cni/bin/"
        rm -f "$root/opt/cni/bin/README.md"
        mv "$root/opt/cni/bin/LICENSE" "$root/LICENSE"
        chmod 0755 "$root/opt" "$root/opt/cni" "$root/opt/cni/bin"
        repro_tar -C "$root" -cf "$work/$a/layer.tar" LICENSE opt
        diff=$(sha256sum "$work/$a/layer.tar" | cut -d' ' -f1)
        gzip -9 -n <"$work/$a/layer.tar" >"$work/$a/layer.tar.gz"
        layer=$(oci_blob "$work/$a/layer.tar.gz")
        platform="\"architecture\":\"$oarch\",\"os\":\"linux\""
        [ "$variant" = - ] || platform+=",\"variant\":\"$variant\""
        printf '{"created":"%s",%s,"config":{"Entrypoint":["/opt/cni/bin/cni-plugins","install"],"Cmd":["--prefix","/host/opt/cni/bin"],"WorkingDir":"/","Labels":{"org.opencontainers.image.title":"cni-rs plugins installer","org.opencontainers.image.version":"%s","org.opencontainers.image.revision":"%s","org.opencontainers.image.licenses":"Apache-2.0"}},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"%s","created_by":"scripts/release.sh %s"}]}' \
            "$created" "$platform" "$version" "${commit:-unknown}" "$diff" "$created" "$version" >"$work/$a/config.json"
        config=$(oci_blob "$work/$a/config.json")
        printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
            ${config% *} ${config#* } ${layer% *} ${layer#* } >"$work/$a/manifest.json"
        manifest=$(oci_blob "$work/$a/manifest.json")
        manifest_of[$a]=$manifest
        descs+=("$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{%s}}' \
            ${manifest% *} ${manifest#* } "$platform")")
    done
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' \
        "$(IFS=,; echo "${descs[*]}")" >"$work/index.json"
    index=$(oci_blob "$work/index.json")
    echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
    # The layout's own index: the multi-architecture index, named.
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
        ${index% *} ${index#* } "$ref" "v$version" >"$layout/index.json"
    find "$layout" -exec touch -h -d "@$epoch" {} +
    repro_tar -C "$layout" -cf "$out/cni-plugins-image-v$version.oci.tar" oci-layout index.json blobs
    echo "image $ref: index ${index% *}" >>"$info"
    say "image $ref: index ${index% *} ($(IFS=' '; echo "${built[*]}"))"
    for a in "${built[@]}"; do
        echo "image $ref for $a: manifest ${manifest_of[$a]% *}" >>"$info"
    done
}
