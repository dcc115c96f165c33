package findings

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// plainConfig is Config without its YAML method, so that decoding it does not recurse.
type plainConfig Config

// UnmarshalYAML decodes the analyzer's section over what c already holds (normally
// DefaultConfig()), strictly: an unknown key is an error naming it. Pools are
// rebuilt: every pool starts from the (possibly changed) defaults and its built-in
// policy, and the file's entry for it overrides only the keys it lists, so
//
//	pools:
//	  dev:
//	    idle: {window: 1h}
//
// changes the dev pool's idle window and nothing else.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the analyzer settings must be a mapping", n.Line)
	}
	top := &yaml.Node{Kind: yaml.MappingNode, Tag: n.Tag}
	var pools *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "pools" {
			pools = n.Content[i+1]
			continue
		}
		top.Content = append(top.Content, n.Content[i], n.Content[i+1])
	}
	if err := decodeStrict(top, (*plainConfig)(c)); err != nil {
		return err
	}
	c.Pools = builtinPools(c.Defaults)
	if pools == nil || pools.Kind == yaml.ScalarNode && pools.Tag == "!!null" {
		return nil
	}
	if pools.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: pools must map pool names to thresholds", pools.Line)
	}
	for i := 0; i+1 < len(pools.Content); i += 2 {
		name := pools.Content[i].Value
		t := builtinPool(name, c.Defaults)
		if err := decodeStrict(pools.Content[i+1], &t); err != nil {
			return fmt.Errorf("pools.%s: %w", name, err)
		}
		c.Pools[name] = t
	}
	return nil
}

// decodeStrict decodes n into out, rejecting keys out does not have. A yaml.Node's
// own Decode is not strict, so the node goes through an encoder and a strict
// decoder; error lines are then relative to the node.
func decodeStrict(n *yaml.Node, out any) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return fmt.Errorf("re-encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("re-encode: %w", err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return err
	}
	return nil
}
